package devnet

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/identity"
)

func TestTheEmbeddedFleetIsExamplesFleetJSON(t *testing.T) {
	onDisk, err := os.ReadFile("../../examples/fleet/fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, DefaultFleet) {
		t.Fatal("alpage/devnet/default_fleet.json differs from examples/fleet/fleet.json: copy the example over it")
	}
}

func TestTheDefaultFleetHasSomethingToShow(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	elected := 0
	for _, v := range f.Versions {
		if v.IsElected() {
			elected++
		}
	}
	if len(f.Subnets) != 1 || len(f.Nodes) != 12 || len(f.NodeOperators) != 2 || len(f.NodeProviders) != 1 || elected != 2 {
		t.Fatalf("subnets %d nodes %d operators %d providers %d elected %d", len(f.Subnets), len(f.Nodes), len(f.NodeOperators), len(f.NodeProviders), elected)
	}
	drifted := 0
	for _, n := range f.Nodes {
		if n.Version != f.Subnets[0].Version {
			drifted++
		}
	}
	if drifted != 1 {
		t.Fatalf("%d nodes run another version than the subnet, want exactly one", drifted)
	}
	if id, ok := f.IdentityNeuron(); !ok || id != 4242 {
		t.Fatalf("identity neuron %d %v", id, ok)
	}
}

func TestABrokenFleetIsRefusedWithEveryReason(t *testing.T) {
	bad := `{"data_centers":[],"node_providers":[],"node_operators":[{"id":"aaaaa-aa","provider":"2vxsx-fae","dc":"nowhere"}],
	  "versions":[],"subnets":[{"id":"not a principal","version":"v9","members":["x"]}],"nodes":[],"neurons":[],
	  "purged_proposals":[{"id":7,"title":"t","topic":"TOPIC_NOPE","status":"OPEN","proposed":"yesterday","decided":"2026-01-01T00:00:00Z"}]}`
	_, err := ParseFleet([]byte(bad))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"provider 2vxsx-fae is not declared", `data center "nowhere"`, `subnet "not a principal"`, `version "v9"`, "member x", `unknown topic "TOPIC_NOPE"`, "status must be", `"yesterday" is not an RFC3339 time`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := ParseFleet([]byte(`{"surprise": 1}`)); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}

func TestTheDevnetServesTheFleetOnEveryEndpoint(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d, err := Start(context.Background(), Options{Fleet: f, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	pemBytes, err := os.ReadFile(d.IdentityPath)
	if err != nil {
		t.Fatal(err)
	}
	id, err := identity.FromPEM(pemBytes)
	if err != nil || id.Sender() != d.Identity {
		t.Fatalf("identity file: %v", err)
	}
	if r := d.Governance.FullNeuron(d.Identity, 4242); r.Ok == nil {
		t.Fatalf("the identity does not control neuron 4242: %+v", r.Err)
	}
	if r := d.Governance.FullNeuron(d.Identity, 1); r.Ok == nil {
		t.Fatalf("the identity is not a hotkey of neuron 1: %+v", r.Err)
	}
	env := map[string]string{}
	for _, e := range d.Env() {
		env[e.Name] = e.Value
	}
	if env["ALP_IDENTITY"] != d.IdentityPath || env["ALP_NEURON"] != "4242" || !strings.HasPrefix(env["ALP_EXPLORER_URL"], "http://127.0.0.1:") {
		t.Fatalf("env: %v", env)
	}

	c := &http.Client{Timeout: 5 * time.Second}
	drifted := "sphjj-5mnm2-cpxtl-z2gqu-qihyc-5c6mb-ul54c-urmgw-x57qu-o5232-yqe"
	// the explorer points at the node's own status endpoint
	code, body := get(t, c, env["ALP_EXPLORER_URL"]+"/api/records/nodes/"+drifted)
	var hist []struct {
		Value struct {
			HTTP struct {
				IPAddr string `json:"ip_addr"`
				Port   uint32 `json:"port"`
			} `json:"http"`
		} `json:"value"`
	}
	if code != 200 || json.Unmarshal(body, &hist) != nil || len(hist) != 1 || !net.ParseIP(hist[0].Value.HTTP.IPAddr).IsLoopback() {
		t.Fatalf("explorer: %d %s", code, body)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(env["ALP_NODE_STATUS_CA"])
	pool.AppendCertsFromPEM(caPEM)
	tc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	code, body = get(t, tc, d.NodeStatusURLs[drifted]+"/api/v2/status")
	var st struct {
		ImplVersion string `cbor:"impl_version"`
	}
	if code != 200 || cbor.Unmarshal(body, &st) != nil || st.ImplVersion != "b14a223a8fa8498a3f75f86d0622d37e24a0a780" {
		t.Fatalf("the drifted node reports %q (%d)", st.ImplVersion, code)
	}
	// the unreachable node has no status endpoint but the dashboard knows it, as DOWN
	unreachable := "duzrk-fjvvw-jhb3e-73vej-iyczl-zwimv-xrnlr-lvg45-ocnlu-yfm6l-nqe"
	if _, ok := d.NodeStatusURLs[unreachable]; ok {
		t.Fatal("the unreachable node serves status")
	}
	code, body = get(t, c, env["ALP_DASHBOARD_URL"]+"/api/v3/nodes/"+unreachable)
	var dn DashboardNode
	if code != 200 || json.Unmarshal(body, &dn) != nil || dn.GuestosVersion == "" || dn.Status != "DOWN" {
		t.Fatalf("dashboard node: %d %s", code, body)
	}
	// the list says the same of it, and lists every registered node once
	code, body = get(t, c, env["ALP_DASHBOARD_URL"]+"/api/v3/nodes")
	var list struct {
		Nodes []DashboardNode `json:"nodes"`
	}
	if code != 200 || json.Unmarshal(body, &list) != nil || len(list.Nodes) != len(d.Registry.Nodes()) {
		t.Fatalf("dashboard list: %d, %d nodes for %d registered: %.200s", code, len(list.Nodes), len(d.Registry.Nodes()), body)
	}
	for _, n := range list.Nodes {
		if n.NodeID == unreachable && n != dn {
			t.Fatalf("the list says %+v of the unreachable node, its own record %+v", n, dn)
		}
	}
	code, body = get(t, c, env["ALP_DASHBOARD_URL"]+"/api/v3/proposals?limit=100&include_topic=TOPIC_IC_OS_VERSION_ELECTION&include_status=EXECUTED")
	if code != 200 || !strings.Contains(string(body), `Release Notes for [release-2026-11-13\\_03-21-base]`) || !strings.Contains(string(body), "f7a20dd476ef99474b4f932fb0a24327bdeb4a67") {
		t.Fatalf("elections: %s", body)
	}
	if code, _ := get(t, c, env["ALP_EXPLORER_URL"]+"/api/records/replica_version_790bb016bef1fc5ebc226e040ef574b29ae87dea"); code != 404 {
		t.Fatalf("the unelected version has a record (%d)", code)
	}
	chip := f.Nodes[0].ChipID
	if code, _ := get(t, c, env["ALP_KDS_URL"]+"/vcek/v1/Milan/"+chip+"?blSPL=0&teeSPL=0&snpSPL=0&ucodeSPL=0"); code != 200 {
		t.Fatalf("KDS does not vouch for node-01's chip (%d)", code)
	}
	if code, _ := get(t, c, env["ALP_KDS_URL"]+"/vcek/v1/Genoa/"+f.Nodes[0].ChipID); code != 404 {
		t.Fatalf("KDS vouches for node-01's Milan chip as a Genoa (%d)", code)
	}
	if code, _ := get(t, c, env["ALP_KDS_URL"]+"/vcek/v1/Milan/"+strings.Repeat("0f", 64)); code != 404 {
		t.Fatalf("KDS vouches for a chip no node has (%d)", code)
	}
}

// TestTheLatencyKnobDelaysEveryEndpoint starts the devnet with --latency and
// times one request to each kind of endpoint it serves: the IC HTTP
// interface, the explorer, the dashboard, the KDS and a node's status.
func TestTheLatencyKnobDelaysEveryEndpoint(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	const latency = 150 * time.Millisecond
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir(), Latency: latency})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var node string
	for _, u := range d.NodeStatusURLs {
		node = u
		break
	}
	if node == "" {
		t.Fatal("no node serves its status")
	}
	plain := &http.Client{Timeout: 10 * time.Second}
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	for _, e := range []struct {
		name, url string
		c         *http.Client
	}{
		{"IC HTTP interface", d.ICURL + "/api/v2/status", plain},
		{"explorer", d.ExplorerURL + "/api/records/nodes/" + f.Nodes[0].ID, plain},
		{"dashboard", d.DashboardURL + "/api/v3/proposals?limit=1", plain},
		{"KDS", d.KDSURL + "/vcek/v1/Milan/" + f.Nodes[0].ChipID, plain},
		{"node status", node + "/api/v2/status", insecure},
	} {
		start := time.Now()
		code, _ := get(t, e.c, e.url)
		if took := time.Since(start); took < latency {
			t.Errorf("%s answered %d in %s, before the %s latency", e.name, code, took, latency)
		}
	}
}

func TestAFleetKeepsType4NodesAndCloudEnginesTogether(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	member := f.Subnets[0].Members[0]
	for i := range f.Nodes {
		if f.Nodes[i].ID == member {
			f.Nodes[i].RewardType = "type4.2"
		}
	}
	f.Nodes[len(f.Nodes)-1].RewardType = "type9"
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseFleet(data)
	for _, want := range []string{"is not a cloud engine, but its member " + member + ` has node_reward_type "type4.2"`, `node_reward_type "type9" is not one of`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

// The devnet's dashboard lists each node with every key, and each key's
// JSON type, of a recorded reply of the real GET /api/v3/nodes (the shape
// alpage/source/testdata/dashboard_nodes.json keeps; docs/decisions.md):
// the fake is held to the real API, not to its own encoder.
func TestTheDashboardsNodeListHasTheShapeOfARecordedReply(t *testing.T) {
	recorded, err := os.ReadFile("../source/testdata/dashboard_nodes.json")
	if err != nil {
		t.Fatal(err)
	}
	shape := func(body []byte) (assigned, free map[string]string) {
		t.Helper()
		var list struct {
			Nodes []map[string]any `json:"nodes"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatal(err)
		}
		for _, n := range list.Nodes {
			kinds := map[string]string{}
			for k, v := range n {
				kinds[k] = fmt.Sprintf("%T", v)
			}
			if n["subnet_id"] == nil {
				free = kinds
			} else {
				assigned = kinds
			}
		}
		return assigned, free
	}
	wantIn, wantFree := shape(recorded)

	d, _ := startDefaultFleet(t)
	resp, err := http.Get(d.DashboardURL + "/api/v3/nodes")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	gotIn, gotFree := shape(body)
	for _, c := range []struct {
		what      string
		got, want map[string]string
	}{{"a member", gotIn, wantIn}, {"an unassigned node", gotFree, wantFree}} {
		if c.got == nil {
			t.Fatalf("the devnet lists no %s", c.what)
		}
		for k, typ := range c.want {
			if c.got[k] != typ {
				t.Errorf("%s: key %q is %q, a recorded reply has %q", c.what, k, c.got[k], typ)
			}
		}
	}
}

// startDefaultFleet runs the devnet on the default fleet for the test.
func startDefaultFleet(t *testing.T) (*Devnet, *Fleet) {
	t.Helper()
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, f
}
