package source

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"

	"alpnib.dev/alpage/devnet"
)

func TestTheDashboardsStatusesAreReadAsDreReadsThem(t *testing.T) {
	for _, tc := range []struct {
		alert, status string
		want          Health
	}{
		{"", "UP", Healthy},
		{"", "UNASSIGNED", Healthy},
		{"IC_PrometheusTargetMissing", "DEGRADED", Healthy}, // only its metrics are missing
		{"IC_Replica_Behind", "DEGRADED", Degraded},
		{"", "DEGRADED", Degraded},
		{"", "DOWN", Down},
		{"IC_PrometheusTargetMissing", "DOWN", Down},
		{"", "UNRECOGNIZED", HealthUnknown},
		{"", "", HealthUnknown},
		{"", "up", HealthUnknown}, // the dashboard's words are upper case
	} {
		if got := DashboardHealth(tc.alert, tc.status); got != tc.want {
			t.Errorf("alert %q status %q: %s, want %s", tc.alert, tc.status, got, tc.want)
		}
	}
}

// testdata/dashboard_nodes.json has the shape of a recorded reply of GET
// /api/v3/nodes (docs/decisions.md, alpage/source): every key, null for a
// node in no subnet, "" for no alert. Its values are made up.
func TestARecordedNodeListIsReadWithEachNodesHealth(t *testing.T) {
	body, err := os.ReadFile("testdata/dashboard_nodes.json")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/nodes" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	got, err := NewDashboard(srv.URL, nil).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Health{
		"uejmo-hdryk-azjya-iddap-kcs4j-ojugo-nctpn-44z2j-4qzmw-zepph-pae": Healthy,
		"scf6h-imz3d-ymjzp-4w6n2-kkhsc-7whbg-erojg-fh4i2-33zvi-ixehi-2ae": Healthy,
		"dnszc-vnxoo-3dily-c5hhe-tnyhm-z77c2-tkzf5-2bmwq-h75bj-h3vyb-pqe": Healthy,
		"q6imu-lou6c-2ntn7-u7stg-e5525-53v2h-4ktrm-q6avy-kb4rb-zenmh-gqe": Degraded,
		"w2u22-uc43z-y3oa3-qhye7-amjve-hsded-m46qq-oqnwu-oimvq-6b4wy-iqe": Down,
	}
	if len(got) != len(want) {
		t.Fatalf("%d nodes read, want %d", len(got), len(want))
	}
	for id, h := range want {
		if got[id].Health() != h {
			t.Errorf("%s: %s (%+v), want %s", id, got[id].Health(), got[id], h)
		}
	}
}

func TestANodeSaysHowHealthyItIs(t *testing.T) {
	for _, say := range []string{"healthy", "certified_state_behind"} {
		cert, _, err := devnet.SelfSignedCert()
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewUnstartedServer(&devnet.NodeStatus{Version: func() string { return "v1" }, Health: func() string { return say }})
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
		srv.StartTLS()
		n, err := NewNodeStatus("")
		if err != nil {
			t.Fatal(err)
		}
		addr := srv.Listener.Addr().(*net.TCPAddr)
		got, err := n.Health(context.Background(), addr.IP.String(), uint32(addr.Port))
		srv.Close()
		if err != nil || got != say {
			t.Fatalf("%q, %v; want %q", got, err, say)
		}
	}
	n, _ := NewNodeStatus("")
	if _, err := n.Health(context.Background(), "", 0); err == nil {
		t.Fatal("a node without an address was read")
	}
}

func TestARememberingClientReadsANodesVersionAndHealthFromOneReply(t *testing.T) {
	cert, _, err := devnet.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	status := &devnet.NodeStatus{Version: func() string { return "v1" }, Health: func() string { return "healthy" }}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		status.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	plain, err := NewNodeStatus("")
	if err != nil {
		t.Fatal(err)
	}
	n := plain.Remembering()
	addr := srv.Listener.Addr().(*net.TCPAddr)
	ip, port := addr.IP.String(), uint32(addr.Port)
	v, verr := n.Version(context.Background(), ip, port)
	h, herr := n.Health(context.Background(), ip, port)
	if verr != nil || herr != nil || v != "v1" || h != "healthy" {
		t.Fatalf("version %q (%v), health %q (%v)", v, verr, h, herr)
	}
	if got := asked.Load(); got != 1 {
		t.Errorf("the node was asked %d times, want once", got)
	}
	if _, err := plain.Health(context.Background(), ip, port); err != nil || asked.Load() != 2 {
		t.Errorf("the client it was made from remembered the reply too (asked %d times, %v)", asked.Load(), err)
	}
}
