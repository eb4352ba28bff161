package devnet

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// DefaultFleet is examples/fleet/fleet.json, embedded so `alp devnet` works from
// anywhere; a test keeps the two identical.
//
//go:embed default_fleet.json
var DefaultFleet []byte

// IdentityRef is the word a fleet file uses, in place of a principal, for the
// identity the devnet writes at start (a neuron controller or hotkey).
const IdentityRef = "identity"

// Fleet is the devnet's fleet file: the live state of the local network at
// start. The format is documented in docs/devnet.md.
type Fleet struct {
	Comment       string            `json:"comment,omitempty"`
	DataCenters   []FleetDataCenter `json:"data_centers"`
	NodeProviders []FleetProvider   `json:"node_providers"`
	NodeOperators []FleetOperator   `json:"node_operators"`
	Versions      []FleetVersion    `json:"versions"`
	// HostOSVersions are the elected HostOS versions: each gets its
	// hostos_version_<id> record.
	HostOSVersions []string      `json:"hostos_versions,omitempty"`
	Subnets        []FleetSubnet `json:"subnets"`
	Nodes          []FleetNode   `json:"nodes"`
	// UnassignedVersion is what a node runs once it leaves its subnet
	// (mainnet's unassigned_nodes_config); empty: it keeps the fleet's
	// version.
	UnassignedVersion string        `json:"unassigned_version,omitempty"`
	Neurons           []FleetNeuron `json:"neurons"`
	// PurgedProposals are older proposals governance no longer holds, which
	// only the dashboard still reports (as for `alp status` on mainnet).
	PurgedProposals []FleetProposal `json:"purged_proposals,omitempty"`
}

// FleetProposal is a decided proposal known only to the dashboard.
type FleetProposal struct {
	ID       uint64 `json:"id"`
	Title    string `json:"title"`
	Summary  string `json:"summary,omitempty"`
	Topic    string `json:"topic"`  // TOPIC_SUBNET_MANAGEMENT, ...
	Status   string `json:"status"` // EXECUTED, FAILED, REJECTED
	Proposed string `json:"proposed"`
	Decided  string `json:"decided"` // RFC3339
	Failure  string `json:"failure,omitempty"`
}

// FleetDataCenter is a registry data center.
type FleetDataCenter struct {
	ID     string `json:"id"`
	Region string `json:"region"`
	Owner  string `json:"owner,omitempty"`
}

// FleetProvider is a node provider governance knows.
type FleetProvider struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// FleetOperator is a node operator record.
type FleetOperator struct {
	ID        string `json:"id"`
	Provider  string `json:"provider"`
	DC        string `json:"dc"`
	Allowance uint64 `json:"allowance,omitempty"`
}

// FleetVersion is a GuestOS version. Elected (the default) versions get a
// replica_version record and an executed election proposal on the dashboard
// whose summary names the release.
type FleetVersion struct {
	ID      string `json:"id"`
	Release string `json:"release,omitempty"`
	Elected *bool  `json:"elected,omitempty"`
}

// IsElected reports whether the version starts elected.
func (v FleetVersion) IsElected() bool { return v.Elected == nil || *v.Elected }

// FleetSubnet is a subnet record.
type FleetSubnet struct {
	ID           string   `json:"id"`
	Type         string   `json:"type,omitempty"`
	Version      string   `json:"version"`
	SevEnabled   *bool    `json:"sev_enabled,omitempty"`
	CostSchedule string   `json:"cost_schedule,omitempty"`
	Admins       []string `json:"admins,omitempty"`
	Members      []string `json:"members"`
	IsHalted     bool     `json:"is_halted,omitempty"`
	// ResourceLimits is the record's resource_limits; omitted: none.
	ResourceLimits *FleetResourceLimits `json:"resource_limits,omitempty"`
}

// FleetResourceLimits is a subnet record's resource_limits; an omitted
// part is unset.
type FleetResourceLimits struct {
	MaximumStateSize            *uint64 `json:"maximum_state_size,omitempty"`
	MaximumStateDelta           *uint64 `json:"maximum_state_delta,omitempty"`
	MaximumQueryInstructions    *uint64 `json:"maximum_query_instructions,omitempty"`
	MaximumQueryWalltimeSeconds *uint64 `json:"maximum_query_walltime_seconds,omitempty"`
}

// FleetNode is a registered node and what it runs. It has no address: the
// devnet gives every node, reachable or not, an endpoint on loopback and
// records that as the node's http endpoint, so nothing that reads the
// registry dials off the machine.
type FleetNode struct {
	ID       string `json:"id"`
	Operator string `json:"operator"`
	// Version is what the node actually runs (its /api/v2/status
	// impl_version); DashboardVersion, when set, is what the dashboard
	// reports instead (the dashboard lags).
	Version          string `json:"version"`
	DashboardVersion string `json:"dashboard_version,omitempty"`
	// HostOS is the node record's hostos_version_id; omitted: unset.
	HostOS string `json:"hostos,omitempty"`
	// ChipID is the node record's chip_id in hex; ChipProduct is the product
	// AMD KDS vouches for it under ("Milan-B0"), empty when KDS does not know
	// the chip; ChipRateLimited makes KDS answer 429 for it.
	ChipID          string `json:"chip_id,omitempty"`
	ChipProduct     string `json:"chip_product,omitempty"`
	ChipRateLimited bool   `json:"chip_rate_limited,omitempty"`
	// RewardType is the node record's node_reward_type ("type1.1",
	// "type4"); omitted: absent. A type4 node (and its variants) may be a
	// member of a cloud engine only, and a cloud engine's members must all
	// be type4.
	RewardType string `json:"node_reward_type,omitempty"`
	// Reachable (default true) gives the node a status endpoint; an
	// unreachable node's endpoint fails the way Unreachable says (refuse
	// when empty), so readers fall back to the dashboard.
	Reachable   *bool  `json:"reachable,omitempty"`
	Unreachable Outage `json:"unreachable,omitempty"`
	// Health is "lagging" for a reachable node whose replica lags: its
	// status endpoint says certified_state_behind and the dashboard lists
	// it DEGRADED. Omitted: healthy.
	Health string `json:"health,omitempty"`
}

// Lagging is FleetNode.Health for a node that answers but lags.
const Lagging = "lagging"

// replicaHealth is the replica_health_status the node's endpoint reports.
func (n FleetNode) replicaHealth() string {
	if n.Health == Lagging {
		return "certified_state_behind"
	}
	return "healthy"
}

// IsReachable reports whether the node serves /api/v2/status.
func (n FleetNode) IsReachable() bool { return n.Reachable == nil || *n.Reachable }

// Outage is how an unreachable node's endpoint fails. The empty value is
// Refuse.
func (n FleetNode) Outage() Outage {
	if n.IsReachable() {
		return ""
	}
	return cmp.Or(n.Unreachable, Refuse)
}

// FleetNeuron is a neuron; controller and hotkeys are principals or
// "identity".
type FleetNeuron struct {
	ID         uint64   `json:"id"`
	Controller string   `json:"controller"`
	HotKeys    []string `json:"hotkeys,omitempty"`
	StakeE8s   uint64   `json:"stake_e8s,omitempty"`
}

// ParseFleet decodes and checks a fleet file: unknown fields, unparsable
// principals, dangling references and a node in two subnets are errors.
func ParseFleet(data []byte) (*Fleet, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f Fleet
	if err := dec.Decode(&f); err != nil {
		if strings.Contains(err.Error(), `unknown field "ipv6"`) {
			return nil, fmt.Errorf("fleet: %w (nodes carry no address: the devnet gives each one a loopback port, so drop ipv6; docs/devnet.md)", err)
		}
		return nil, fmt.Errorf("fleet: %w", err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return &f, nil
}

func (f *Fleet) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	isPrincipal := func(what, s string) bool {
		if _, err := principal.Decode(s); err != nil {
			bad("%s %q: %v", what, s, err)
			return false
		}
		return true
	}
	unique := func(kind string) func(string) {
		seen := map[string]bool{}
		return func(id string) {
			if seen[id] {
				bad("%s %s is declared twice", kind, id)
			}
			seen[id] = true
		}
	}
	dcs, providers, operators, versions, nodes := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	u := unique("data center")
	for _, d := range f.DataCenters {
		u(d.ID)
		dcs[d.ID] = true
	}
	u = unique("node provider")
	for _, p := range f.NodeProviders {
		u(p.ID)
		isPrincipal("node provider", p.ID)
		providers[p.ID] = true
	}
	u = unique("node operator")
	for _, o := range f.NodeOperators {
		u(o.ID)
		isPrincipal("node operator", o.ID)
		if !providers[o.Provider] {
			bad("node operator %s: provider %s is not declared", o.ID, o.Provider)
		}
		if !dcs[o.DC] {
			bad("node operator %s: data center %q is not declared", o.ID, o.DC)
		}
		operators[o.ID] = true
	}
	u = unique("version")
	for _, v := range f.Versions {
		u(v.ID)
		if v.ID == "" {
			bad("a version has no id")
		}
		versions[v.ID] = true
	}
	if f.UnassignedVersion != "" && !versions[f.UnassignedVersion] {
		bad("unassigned_version %q is not declared", f.UnassignedVersion)
	}
	u = unique("node")
	rewardType := map[string]string{}
	for _, n := range f.Nodes {
		u(n.ID)
		isPrincipal("node", n.ID)
		if !operators[n.Operator] {
			bad("node %s: operator %s is not declared", n.ID, n.Operator)
		}
		if n.ChipID != "" {
			if b, err := hex.DecodeString(n.ChipID); err != nil || len(b) != 64 {
				bad("node %s: chip_id must be 64 bytes in hex", n.ID)
			}
		}
		switch {
		case n.Unreachable != "" && n.IsReachable():
			bad("node %s: unreachable is %q but the node is reachable (set \"reachable\": false)", n.ID, n.Unreachable)
		case n.Health != "" && n.Health != Lagging:
			bad("node %s: health must be %q or omitted, not %q", n.ID, Lagging, n.Health)
		case n.Health != "" && !n.IsReachable():
			bad("node %s: health %q is for a reachable node; an unreachable one is down", n.ID, n.Health)
		case n.Unreachable != "" && !slices.Contains(Outages, n.Unreachable):
			bad("node %s: unreachable must be %q or %q, not %q", n.ID, Refuse, Blackhole, n.Unreachable)
		}
		if n.ChipProduct != "" && !contains(KDSProducts, strings.SplitN(n.ChipProduct, "-", 2)[0]) {
			bad("node %s: chip_product %q is not a Milan, Genoa or Turin product", n.ID, n.ChipProduct)
		}
		if _, ok := nns.RewardTypeNamed(n.RewardType); n.RewardType != "" && !ok {
			bad("node %s: node_reward_type %q is not one of type0, type1, type1.1, type2, type3, type3.1, type4, type4.1 … type4.5", n.ID, n.RewardType)
		}
		nodes[n.ID] = true
		rewardType[n.ID] = n.RewardType
	}
	u = unique("subnet")
	member := map[string]string{}
	for _, s := range f.Subnets {
		u(s.ID)
		isPrincipal("subnet", s.ID)
		if _, ok := nns.SubnetTypeNamed(orDefault(s.Type, "application")); !ok {
			bad("subnet %s: unknown type %q", s.ID, s.Type)
		}
		if s.CostSchedule != "" && s.CostSchedule != "normal" && s.CostSchedule != "free" {
			bad("subnet %s: cost_schedule must be normal or free", s.ID)
		}
		if !versions[s.Version] {
			bad("subnet %s: version %q is not declared", s.ID, s.Version)
		}
		for _, a := range s.Admins {
			isPrincipal("subnet admin", a)
		}
		for _, m := range s.Members {
			if !nodes[m] {
				bad("subnet %s: member %s is not a declared node", s.ID, m)
			}
			if other, ok := member[m]; ok {
				bad("node %s is a member of subnets %s and %s", m, other, s.ID)
			}
			t, _ := nns.RewardTypeNamed(rewardType[m])
			engineNode := nns.IsCloudEngineNode(&t)
			switch engine := orDefault(s.Type, "application") == "cloud_engine"; {
			case engine && !engineNode:
				bad("subnet %s is a cloud engine, but its member %s has node_reward_type %q; the registry's invariants allow only type4 nodes in a cloud engine", s.ID, m, rewardType[m])
			case !engine && engineNode:
				bad("subnet %s is not a cloud engine, but its member %s has node_reward_type %q; the registry's invariants allow type4 nodes only in a cloud engine", s.ID, m, rewardType[m])
			}
			member[m] = s.ID
		}
	}
	u = unique("purged proposal")
	for _, p := range f.PurgedProposals {
		u(fmt.Sprint(p.ID))
		if p.ID == 0 {
			bad("a purged proposal has id 0")
		}
		if _, ok := nns.ParseTopic(p.Topic); !ok {
			bad("purged proposal %d: unknown topic %q", p.ID, p.Topic)
		}
		if p.Status != "EXECUTED" && p.Status != "FAILED" && p.Status != "REJECTED" {
			bad("purged proposal %d: status must be EXECUTED, FAILED or REJECTED", p.ID)
		}
		for _, ts := range []string{p.Proposed, p.Decided} {
			if _, err := time.Parse(time.RFC3339, ts); err != nil {
				bad("purged proposal %d: %q is not an RFC3339 time", p.ID, ts)
			}
		}
	}
	u = unique("neuron")
	for _, n := range f.Neurons {
		u(fmt.Sprint(n.ID))
		if n.Controller != IdentityRef {
			isPrincipal("neuron controller", n.Controller)
		}
		for _, h := range n.HotKeys {
			if h != IdentityRef {
				isPrincipal("neuron hotkey", h)
			}
		}
	}
	return errors.Join(errs...)
}

// IdentityNeuron is the first neuron the devnet identity controls, else the
// first it is a hotkey of; ok is false when it has none.
func (f *Fleet) IdentityNeuron() (id uint64, ok bool) {
	for _, n := range f.Neurons {
		if n.Controller == IdentityRef {
			return n.ID, true
		}
	}
	for _, n := range f.Neurons {
		if contains(n.HotKeys, IdentityRef) {
			return n.ID, true
		}
	}
	return 0, false
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
