// Package devnet assembles alp's offline development network: the local NNS
// (ic/localnet) plus stand-ins for the third-party services alp reads — the
// registry explorer, the ICP dashboard, each node's /api/v2/status and AMD's
// key distribution service — each speaking its real service's wire format,
// seeded from one fleet file.
package devnet

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Explorer serves the registry explorer's HTTP API
// (https://registry.aviatelabs.co) over a local registry:
//
//	GET /api/records/nodes/<node>               node_record_<node> history
//	GET /api/records/node-operators/<op>/nodes  ids of the operator's nodes
//	GET /api/records/<key>                      any key's history
//
// A history is a JSON array of {key, version, value} mutations, oldest
// first, where value is the record rendered as JSON or null for a deletion;
// a key never written is 404, as is an operator without nodes.
type Explorer struct {
	Registry *registry.Registry
}

type explorerEntry struct {
	Key     string `json:"key"`
	Version uint64 `json:"version"`
	Value   any    `json:"value"`
}

// ServeHTTP implements http.Handler.
func (e *Explorer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/records/")
	if !ok || rest == "" {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasPrefix(rest, "nodes/"):
		e.history(w, r, nns.NodeRecordKey(strings.TrimPrefix(rest, "nodes/")))
	case strings.HasPrefix(rest, "node-operators/") && strings.HasSuffix(rest, "/nodes"):
		e.operatorNodes(w, r, strings.TrimSuffix(strings.TrimPrefix(rest, "node-operators/"), "/nodes"))
	default:
		e.history(w, r, rest)
	}
}

func (e *Explorer) history(w http.ResponseWriter, r *http.Request, key string) {
	h := e.Registry.History(key)
	if len(h) == 0 {
		http.NotFound(w, r)
		return
	}
	out := make([]explorerEntry, 0, len(h))
	for _, entry := range h {
		var v any
		if entry.Value != nil {
			var err error
			if v, err = recordJSON(key, entry.Value); err != nil {
				http.Error(w, "decode "+key+": "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		out = append(out, explorerEntry{Key: key, Version: entry.Version, Value: v})
	}
	writeJSON(w, out)
}

func (e *Explorer) operatorNodes(w http.ResponseWriter, r *http.Request, op string) {
	id, err := principal.Decode(op)
	if err != nil {
		http.Error(w, "bad operator id: "+err.Error(), http.StatusBadRequest)
		return
	}
	nodes, err := e.Registry.NodesOfOperator(id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if len(nodes) == 0 {
		http.NotFound(w, r)
		return
	}
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.String()
	}
	writeJSON(w, ids)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func principalText(b []byte) string {
	if p, err := principal.FromBytes(b); err == nil {
		return p.String()
	}
	return base64.StdEncoding.EncodeToString(b)
}

type endpointJSON struct {
	IPAddr string `json:"ip_addr"`
	Port   uint32 `json:"port"`
}

func endpoint(c *nns.ConnectionEndpoint) *endpointJSON {
	if c == nil {
		return nil
	}
	return &endpointJSON{IPAddr: c.IPAddr, Port: c.Port}
}

// recordJSON renders a record the way the explorer does: principals as text,
// byte strings (chip_id) as base64, enums by name.
func recordJSON(key string, b []byte) (any, error) {
	switch {
	case strings.HasPrefix(key, "node_record_"):
		var rec nns.NodeRecordPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		out := map[string]any{
			"xnet":             endpoint(rec.Xnet),
			"http":             endpoint(rec.HTTP),
			"node_operator_id": principalText(rec.NodeOperatorID),
		}
		if rec.ChipID != nil {
			out["chip_id"] = base64.StdEncoding.EncodeToString(rec.ChipID)
		}
		return out, nil
	case strings.HasPrefix(key, "replica_version_"):
		var rec nns.ReplicaVersionRecordPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		urls := rec.ReleasePackageURLs
		if urls == nil {
			urls = []string{}
		}
		return map[string]any{"release_package_sha256_hex": rec.ReleasePackageSha256Hex, "release_package_urls": urls}, nil
	case strings.HasPrefix(key, "subnet_record_"):
		var rec nns.SubnetRecordPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		return subnetJSON(rec), nil
	case strings.HasPrefix(key, "node_operator_record_"):
		var rec nns.NodeOperatorRecordPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		out := map[string]any{
			"node_operator_principal_id": principalText(rec.NodeOperatorPrincipalID),
			"node_provider_principal_id": principalText(rec.NodeProviderPrincipalID),
			"node_allowance":             rec.NodeAllowance,
			"dc_id":                      rec.DcID,
			"rewardable_nodes":           rec.RewardableNodes,
		}
		if rec.IPv6 != nil {
			out["ipv6"] = *rec.IPv6
		}
		return out, nil
	case strings.HasPrefix(key, "data_center_record_"):
		var rec nns.DataCenterRecordPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		out := map[string]any{"id": rec.ID, "region": rec.Region, "owner": rec.Owner}
		if rec.Gps != nil {
			out["gps"] = map[string]float32{"latitude": rec.Gps.Latitude, "longitude": rec.Gps.Longitude}
		}
		return out, nil
	case key == nns.BlessedReplicaVersionsKey:
		var rec nns.BlessedReplicaVersionsPB
		if err := rec.Unmarshal(b); err != nil {
			return nil, err
		}
		return map[string]any{"blessed_version_ids": rec.BlessedVersionIDs}, nil
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

var subnetTypeNames = map[int32]string{
	nns.SubnetTypeApplication:         "application",
	nns.SubnetTypeSystem:              "system",
	nns.SubnetTypeVerifiedApplication: "verified_application",
	nns.SubnetTypeCloudEngine:         "cloud_engine",
}

var costScheduleNames = map[int32]string{
	nns.CostScheduleUnspecified: "unspecified",
	nns.CostScheduleNormal:      "normal",
	nns.CostScheduleFree:        "free",
}

func subnetJSON(rec nns.SubnetRecordPB) map[string]any {
	members := []string{}
	for _, m := range rec.Membership {
		members = append(members, principalText(m))
	}
	admins := []string{}
	for _, a := range rec.SubnetAdmins {
		admins = append(admins, principalText(a))
	}
	out := map[string]any{
		"membership":                     members,
		"replica_version_id":             rec.ReplicaVersionID,
		"subnet_type":                    subnetTypeNames[rec.SubnetType],
		"is_halted":                      rec.IsHalted,
		"halt_at_cup_height":             rec.HaltAtCupHeight,
		"max_number_of_canisters":        rec.MaxNumberOfCanisters,
		"ssh_readonly_access":            nonNil(rec.SSHReadonlyAccess),
		"ssh_backup_access":              nonNil(rec.SSHBackupAccess),
		"canister_cycles_cost_schedule":  costScheduleNames[rec.CanisterCyclesCostSchedule],
		"subnet_admins":                  admins,
		"unit_delay_millis":              rec.UnitDelayMillis,
		"initial_notary_delay_millis":    rec.InitialNotaryDelayMillis,
		"dkg_interval_length":            rec.DkgIntervalLength,
		"dkg_dealings_per_block":         rec.DkgDealingsPerBlock,
		"max_ingress_bytes_per_message":  rec.MaxIngressBytesPerMessage,
		"max_ingress_bytes_per_block":    rec.MaxIngressBytesPerBlock,
		"max_ingress_messages_per_block": rec.MaxIngressMessagesPerBlock,
		"max_block_payload_size":         rec.MaxBlockPayloadSize,
	}
	if f := rec.Features; f != nil {
		feat := map[string]any{"canister_sandboxing": f.CanisterSandboxing, "http_requests": f.HTTPRequests}
		if f.SevEnabled != nil {
			feat["sev_enabled"] = *f.SevEnabled
		}
		out["features"] = feat
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
