package devnet

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestTheExplorerServesNodeHistoryOperatorNodesAndElections(t *testing.T) {
	r := registry.New()
	op, node, gone := pid("op"), pid("node"), pid("gone")
	r.AddNodeOperator(registry.NodeOperator{ID: op, Provider: pid("np"), DataCenter: "zh1"})
	chip := bytes.Repeat([]byte{0xc1}, 64)
	if _, err := r.AddNode(registry.Node{ID: node, Operator: op, IPv6: "2001:db8::1", ChipID: chip}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.AddNode(registry.Node{ID: gone, Operator: op, IPv6: "2001:db8::2"}); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveNodes(nns.RemoveNodesPayload{NodeIDs: []principal.Principal{gone}}); err != nil {
		t.Fatal(err)
	}
	r.ElectVersion("aaa", nns.ReplicaVersionRecordPB{ReleasePackageSha256Hex: "ff"})
	r.ElectVersion("bbb", nns.ReplicaVersionRecordPB{})
	if err := r.UnelectVersion("bbb"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Explorer{Registry: r})
	defer srv.Close()
	c := srv.Client()

	type entry struct {
		Key     string          `json:"key"`
		Version uint64          `json:"version"`
		Value   json.RawMessage `json:"value"`
	}
	code, body := get(t, c, srv.URL+"/api/records/nodes/"+node.String())
	var hist []entry
	if code != 200 || json.Unmarshal(body, &hist) != nil || len(hist) != 1 {
		t.Fatalf("node: %d %s", code, body)
	}
	var val struct {
		NodeOperatorID string `json:"node_operator_id"`
		ChipID         string `json:"chip_id"`
		HTTP           struct {
			IPAddr string `json:"ip_addr"`
			Port   uint32 `json:"port"`
		} `json:"http"`
	}
	if err := json.Unmarshal(hist[0].Value, &val); err != nil {
		t.Fatal(err)
	}
	if hist[0].Key != "node_record_"+node.String() || val.NodeOperatorID != op.String() || val.HTTP.IPAddr != "2001:db8::1" || val.HTTP.Port != 8080 {
		t.Fatalf("node value: %+v", val)
	}
	if got, _ := base64.StdEncoding.DecodeString(val.ChipID); !bytes.Equal(got, chip) {
		t.Fatalf("chip_id %q", val.ChipID)
	}

	code, body = get(t, c, srv.URL+"/api/records/nodes/"+gone.String())
	hist = nil
	if code != 200 || json.Unmarshal(body, &hist) != nil || len(hist) != 2 || string(hist[1].Value) != "null" || hist[1].Version <= hist[0].Version {
		t.Fatalf("deregistered node: %d %s", code, body)
	}
	if code, _ := get(t, c, srv.URL+"/api/records/nodes/"+pid("never").String()); code != 404 {
		t.Fatalf("never-registered node answered %d", code)
	}

	code, body = get(t, c, srv.URL+"/api/records/node-operators/"+op.String()+"/nodes")
	var ids []string
	if code != 200 || json.Unmarshal(body, &ids) != nil || len(ids) != 1 || ids[0] != node.String() {
		t.Fatalf("operator nodes: %d %s", code, body)
	}
	if code, _ := get(t, c, srv.URL+"/api/records/node-operators/"+pid("idle").String()+"/nodes"); code != 404 {
		t.Fatalf("operator without nodes answered %d", code)
	}

	elected := func(v string) bool {
		code, body := get(t, c, srv.URL+"/api/records/replica_version_"+v)
		if code == 404 {
			return false
		}
		var h []entry
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatal(err)
		}
		return string(h[len(h)-1].Value) != "null"
	}
	if !elected("aaa") || elected("bbb") || elected("ccc") {
		t.Fatal("replica_version records do not say aaa elected, bbb unelected, ccc unknown")
	}
}

func TestTheDashboardListsElectionsAndProposalsByTopicAndStatus(t *testing.T) {
	g := governance.New(governance.Config{}, nil)
	g.AddNeuron(governance.Neuron{ID: 1, Controller: pid("me"), StakeE8s: 1})
	g.AddNodeProvider(pid("np"))
	election := func(v, name string) nns.ProposalInfo {
		title := "Elect new IC/Replica revision " + v
		return nns.ProposalInfo{Status: int32(nns.StatusExecuted), Topic: int32(nns.TopicIcOsVersionElection),
			Proposal: &nns.Proposal{Title: &title, Summary: "Release Notes for [" + name + "](https://github.com/dfinity/ic/tree/" + name + ")",
				Action: &nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionReviseElectedGuestosVersions)}}}}
	}
	e1 := g.SeedProposal(election("aaa", "release-2026-10-01_03-00-base"))
	e2 := g.SeedProposal(election("bbb", "release-2026-11-01_03-00-base"))
	title := "Remove provider"
	np := pid("np")
	removal, _ := g.MakeProposal(pid("me"), 1, nns.MakeProposalRequest{Title: &title, Action: &nns.ProposalActionRequest{
		AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &np}}}}})
	payloads := map[uint64]any{e1: map[string]string{"replica_version_to_elect": "aaa"}, e2: map[string]string{"replica_version_to_elect": "bbb"}}
	d := &Dashboard{
		Proposals: func() []DashboardProposal { return DashboardProposals(g, func(id uint64) any { return payloads[id] }) },
		Node: func(id string) (DashboardNode, bool) {
			if id == pid("node").String() {
				return DashboardNode{NodeID: id, GuestosVersion: "aaa", Status: "UP"}, true
			}
			return DashboardNode{}, false
		},
	}
	srv := httptest.NewServer(d)
	defer srv.Close()
	c := srv.Client()

	code, body := get(t, c, srv.URL+"/api/v3/proposals?limit=100&include_topic=TOPIC_IC_OS_VERSION_ELECTION&include_status=EXECUTED")
	var list struct {
		Data []struct {
			ID      uint64 `json:"id"`
			Summary string `json:"summary"`
			Payload struct {
				ReplicaVersionToElect string `json:"replica_version_to_elect"`
			} `json:"payload"`
		} `json:"data"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Data) != 2 {
		t.Fatalf("elections: %d %s", code, body)
	}
	if list.Data[0].ID != e2 || list.Data[0].Payload.ReplicaVersionToElect != "bbb" || !strings.Contains(list.Data[0].Summary, "Release Notes for [release-2026-11-01_03-00-base]") {
		t.Fatalf("newest election first with its release name: %+v", list.Data[0])
	}
	code, body = get(t, c, srv.URL+"/api/v3/proposals?limit=1")
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Data) != 1 || list.Data[0].ID != removal {
		t.Fatalf("limit=1: %s", body)
	}

	code, body = get(t, c, srv.URL+"/api/v3/proposals/"+jsonNumber(removal))
	var one struct {
		Status      string `json:"status"`
		Topic       string `json:"topic"`
		LatestTally struct {
			Yes, Total uint64
		} `json:"latest_tally"`
		ExecutedTimestampSeconds uint64 `json:"executed_timestamp_seconds"`
	}
	if code != 200 || json.Unmarshal(body, &one) != nil || one.Status != "EXECUTED" || one.Topic != "TOPIC_PARTICIPANT_MANAGEMENT" || one.ExecutedTimestampSeconds == 0 {
		t.Fatalf("proposal: %d %s", code, body)
	}
	if code, _ := get(t, c, srv.URL+"/api/v3/proposals/999"); code != 404 {
		t.Fatalf("unknown proposal answered %d", code)
	}
	code, body = get(t, c, srv.URL+"/api/v3/nodes/"+pid("node").String())
	var n DashboardNode
	if code != 200 || json.Unmarshal(body, &n) != nil || n.GuestosVersion != "aaa" {
		t.Fatalf("node: %d %s", code, body)
	}
	if code, _ := get(t, c, srv.URL+"/api/v3/nodes/"+pid("other").String()); code != 404 {
		t.Fatalf("unknown node answered %d", code)
	}
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func TestANodeReportsItsVersionInCBOROverHTTPS(t *testing.T) {
	cert, certPEM, err := SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(&NodeStatus{Version: func() string { return "deadbeef" }})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if !strings.HasPrefix(srv.URL, "https://127.0.0.1:") {
		t.Fatalf("url %s", srv.URL)
	}
	resp, err := c.Get(srv.URL + "/api/v2/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// the handshake is signed with Ed25519, as a replica's is
	if st := resp.TLS; st == nil || len(st.PeerCertificates) != 1 || st.PeerCertificates[0].PublicKeyAlgorithm != x509.Ed25519 {
		t.Fatalf("node certificate: %+v", st)
	}
	code, body := get(t, c, srv.URL+"/api/v2/status")
	if code != 200 || !bytes.HasPrefix(body, []byte{0xd9, 0xd9, 0xf7}) {
		t.Fatalf("status: %d %x", code, body)
	}
	var st struct {
		ImplVersion *string `cbor:"impl_version"`
	}
	if err := cbor.Unmarshal(body, &st); err != nil || st.ImplVersion == nil || *st.ImplVersion != "deadbeef" {
		t.Fatalf("impl_version: %v %v", err, st.ImplVersion)
	}
}

func TestTheKDSVouchesOnlyForItsChipsWithASignedVCEK(t *testing.T) {
	chip := strings.Repeat("ab", 64)
	limited := strings.Repeat("cd", 64)
	kds, err := NewKDS(map[string]string{chip: "Milan-B0", limited: "Genoa-B1"}, []string{limited})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(kds)
	defer srv.Close()
	c := srv.Client()
	q := "?blSPL=0&teeSPL=0&snpSPL=0&ucodeSPL=0"

	code, der := get(t, c, srv.URL+"/vcek/v1/Milan/"+strings.ToUpper(chip)+q)
	if code != 200 {
		t.Fatalf("vcek: %d %s", code, der)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(kds.CACertificate()); err != nil {
		t.Fatalf("not signed by the CA: %v", err)
	}
	var hwid []byte
	var product string
	for _, e := range cert.Extensions {
		switch {
		case e.Id.Equal(OIDHwID):
			if _, err := asn1.Unmarshal(e.Value, &hwid); err != nil {
				t.Fatal(err)
			}
		case e.Id.Equal(OIDProductName):
			if _, err := asn1.Unmarshal(e.Value, &product); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hex.EncodeToString(hwid) != chip || product != "Milan-B0" {
		t.Fatalf("hwid %x product %q", hwid, product)
	}
	if code, again := get(t, c, srv.URL+"/vcek/v1/Milan/"+chip+q); code != 200 || !bytes.Equal(again, der) {
		t.Fatal("a second request returned another certificate")
	}
	for _, c2 := range []struct {
		url  string
		want int
	}{
		{"/vcek/v1/Genoa/" + chip + q, 404},                     // another product line
		{"/vcek/v1/Milan/" + strings.Repeat("ef", 64) + q, 404}, // unknown chip
		{"/vcek/v1/Genoa/" + limited + q, 429},                  // rate-limited: inconclusive
		{"/vcek/v1/Milan/abcd" + q, 400},                        // not 64 bytes
		{"/vcek/v1/Naples/" + chip + q, 404},                    // not a product
	} {
		if code, _ := get(t, c, srv.URL+c2.url); code != c2.want {
			t.Errorf("%s: %d, want %d", c2.url, code, c2.want)
		}
	}
}

func TestLatencyDelaysEveryRequest(t *testing.T) {
	srv := httptest.NewServer(WithLatency(50*time.Millisecond, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})))
	defer srv.Close()
	start := time.Now()
	get(t, srv.Client(), srv.URL)
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("answered in %s", d)
	}
}

func TestPayloadsRenderByCandidNameLikeTheDashboard(t *testing.T) {
	on := true
	b, err := candid.Marshal(nns.UpdateSubnetPayload{SubnetID: pid("s"), IsHalted: &on, SubnetType: &nns.SubnetType{Application: &struct{}{}}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(PayloadJSON(nns.FunctionUpdateConfigOfSubnet, b))
	for _, want := range []string{`"subnet_id":"` + pid("s").String() + `"`, `"is_halted":true`, `"subnet_type":{"application":null}`, `"max_number_of_canisters":null`, `"set_gossip_config_to_default":false`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("%s lacks %s", got, want)
		}
	}
	ops, _ := candid.Marshal(nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{{1, 2}}})
	if got, _ := json.Marshal(PayloadJSON(nns.FunctionRemoveNodeOperators, ops)); !strings.Contains(string(got), `"node_operators_to_remove":["0102"]`) {
		t.Errorf("blobs: %s", got)
	}
	if PayloadJSON(nns.FunctionRemoveNodes, []byte("junk")) != nil || PayloadJSON(nns.NnsFunction(99), b) != nil {
		t.Error("undecodable or unknown payloads should render as null")
	}
}
