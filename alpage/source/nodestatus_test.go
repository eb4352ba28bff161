package source

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/alpage/devnet"
)

// nodeOver serves a devnet node status endpoint over TLS on loopback and
// returns its address and the CA file that vouches for it.
func nodeOver(t *testing.T, version string) (ip string, port uint32, caFile string) {
	t.Helper()
	cert, pem, err := devnet.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(&devnet.NodeStatus{Version: func() string { return version }})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := srv.Listener.Addr().(*net.TCPAddr)
	return addr.IP.String(), uint32(addr.Port), caFile
}

func TestANodeReportsItsImplVersionOverTLS(t *testing.T) {
	ip, port, ca := nodeOver(t, "f7a20dd4")
	for _, caFile := range []string{ca, ""} { // pinned, and unchecked like a mainnet replica
		n, err := NewNodeStatus(caFile)
		if err != nil {
			t.Fatal(err)
		}
		v, err := n.Version(context.Background(), ip, port)
		if err != nil || v != "f7a20dd4" {
			t.Fatalf("ca %q: %q, %v", caFile, v, err)
		}
	}
}

// The ClientHello carries one key share, X25519's: no X25519MLKEM768,
// whose key generation a replica's TLS stack (X25519, P-256, P-384) never
// uses. A node that takes only P-256 or P-384 is still read (it asks for
// that share with a HelloRetryRequest).
func TestANodeStatusReadOffersX25519FirstAndFallsBack(t *testing.T) {
	for _, server := range [][]tls.CurveID{{tls.X25519}, {tls.CurveP256}, {tls.CurveP384}} {
		cert, pem, err := devnet.SelfSignedCert()
		if err != nil {
			t.Fatal(err)
		}
		offered := make(chan []tls.CurveID, 1)
		srv := httptest.NewUnstartedServer(&devnet.NodeStatus{Version: func() string { return "v1" }})
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, CurvePreferences: server,
			GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				select {
				case offered <- h.SupportedCurves:
				default: // the second ClientHello after a retry
				}
				return nil, nil
			}}
		srv.StartTLS()
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(caFile, pem, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := NewNodeStatus(caFile)
		if err != nil {
			t.Fatal(err)
		}
		addr := srv.Listener.Addr().(*net.TCPAddr)
		v, err := n.Version(context.Background(), addr.IP.String(), uint32(addr.Port))
		srv.Close()
		if err != nil || v != "v1" {
			t.Fatalf("a node taking only %v: %q, %v", server, v, err)
		}
		got := <-offered
		if len(got) == 0 || got[0] != tls.X25519 || slices.Contains(got, tls.X25519MLKEM768) {
			t.Fatalf("offered groups %v; want X25519 first and no X25519MLKEM768", got)
		}
	}
}

func TestANodeWhoseCertificateTheCADoesNotVouchForIsNotRead(t *testing.T) {
	ip, port, _ := nodeOver(t, "v1")
	_, _, otherCA := nodeOver(t, "v1")
	n, err := NewNodeStatus(otherCA)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Version(context.Background(), ip, port); err == nil {
		t.Fatal("read a node the CA does not vouch for")
	}
}

func TestImplVersionReadsTaggedAndUntaggedReplies(t *testing.T) {
	plain, _ := cbor.Marshal(map[string]any{"impl_version": "abc", "replica_health_status": "healthy"})
	tagged, _ := cbor.Marshal(cbor.Tag{Number: 55799, Content: map[string]any{"impl_version": "def"}})
	for body, want := range map[string]string{string(plain): "abc", string(tagged): "def"} {
		if got, err := ImplVersion([]byte(body)); err != nil || got != want {
			t.Errorf("%q, %v; want %q", got, err, want)
		}
	}
	empty, _ := cbor.Marshal(map[string]any{"replica_health_status": "healthy"})
	if _, err := ImplVersion(empty); err == nil {
		t.Error("a status without impl_version read")
	}
	if _, err := ImplVersion([]byte("not cbor")); err == nil {
		t.Error("garbage read")
	}
}

func TestNodeStatusURLBracketsIPv6AndDefaultsThePort(t *testing.T) {
	if got := NodeStatusURL("2001:db8::1", 0); got != "https://[2001:db8::1]:8080/api/v2/status" {
		t.Fatal(got)
	}
}

func TestTheDashboardTellsANodesVersion(t *testing.T) {
	srv := httptest.NewServer(&devnet.Dashboard{
		Proposals: func() []devnet.DashboardProposal { return nil },
		Node: func(id string) (devnet.DashboardNode, bool) {
			return devnet.DashboardNode{NodeID: id, GuestosVersion: "v9"}, id == "known"
		},
	})
	defer srv.Close()
	d := NewDashboard(srv.URL, nil)
	if v, ok, err := d.NodeVersion(context.Background(), "known"); err != nil || !ok || v != "v9" {
		t.Fatalf("%q %v %v", v, ok, err)
	}
	if _, ok, err := d.NodeVersion(context.Background(), "stranger"); err != nil || ok {
		t.Fatalf("unknown node: %v %v", ok, err)
	}
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer broken.Close()
	if _, _, err := NewDashboard(broken.URL, nil).NodeVersion(context.Background(), "known"); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err %v", err)
	}
}

func TestTheDashboardListsEveryNodeOnceByID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v3/nodes" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"nodes": [
			{"node_id": "a", "guestos_version": "v1", "status": "UP", "future_field": 1},
			{"node_id": "b", "guestos_version": "v2", "status": "DOWN"},
			{"node_id": "a", "guestos_version": "v-later", "status": "DOWN"},
			{"guestos_version": "v3", "status": "UP"}
		], "future_top_level": true}`))
	}))
	defer srv.Close()
	got, err := NewDashboard(srv.URL, nil).Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]DashboardNode{
		"a": {NodeID: "a", GuestOSVersion: "v1", Status: "UP"},
		"b": {NodeID: "b", GuestOSVersion: "v2", Status: "DOWN"},
	}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if _, err := NewDashboard("http://127.0.0.1:1", nil).Nodes(context.Background()); err == nil || !strings.Contains(err.Error(), "ICP dashboard") {
		t.Fatalf("a dashboard that does not answer: %v", err)
	}
}
