package localnet_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/principal"
)

// onApp is a canister id on the second subnet of a two-subnet localnet.
var onApp = principal.CanisterID(localnet.RootSubnetLastCanister + 7)

// twoSubnets is a two-subnet localnet with an echo canister on each subnet,
// behind a front that answers 404 for the endpoints in off ("v4 call",
// "v3 subnet read_state") and counts what it passes.
type twoSubnets struct {
	srv  *localnet.Server
	url  string
	mu   sync.Mutex
	off  map[string]bool
	hits map[string]int
}

func echo() localnet.Methods {
	h := func(_ context.Context, _ principal.Principal, arg []byte) ([]byte, error) { return arg, nil }
	return localnet.Methods{"echo": {Query: true, Handler: h}, "echo_update": {Handler: h}}
}

func startTwoSubnets(t *testing.T, off ...string) *twoSubnets {
	t.Helper()
	srv, err := localnet.New(localnet.Options{Subnets: 2})
	if err != nil {
		t.Fatal(err)
	}
	srv.Install(principal.CanisterID(3), echo())
	srv.Install(onApp, echo())
	n := &twoSubnets{srv: srv, off: map[string]bool{}, hits: map[string]int{}}
	for _, o := range off {
		n.off[o] = true
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := endpointName(r.URL.Path)
		n.mu.Lock()
		n.hits[name]++
		refused := n.off[name]
		n.mu.Unlock()
		if refused {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	n.url = hs.URL
	return n
}

// endpointName turns /api/v3/subnet/<id>/read_state into "v3 subnet read_state".
func endpointName(path string) string {
	p := strings.Split(strings.TrimPrefix(path, "/api/"), "/")
	if len(p) != 4 {
		return path
	}
	if p[1] == "subnet" {
		return p[0] + " subnet " + p[3]
	}
	return p[0] + " " + p[3]
}

func (n *twoSubnets) hitsOf(name string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hits[name]
}

func (n *twoSubnets) agent(t *testing.T) *agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{URL: n.url, Identity: newIdentity(t), FetchRootKey: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestEveryEndpointOfBothSubnetsIsAnsweredAndVerifiedByTheAgent(t *testing.T) {
	for _, c := range []struct {
		endpoint string
		off      []string
	}{
		{"v4 call", nil},
		{"v3 call", []string{"v4 call"}},
		{"v2 call", []string{"v4 call", "v3 call"}},
		{"v3 query", nil},
		{"v2 query", []string{"v3 query"}},
		{"v3 read_state", nil},
		{"v2 read_state", []string{"v3 read_state"}},
		{"v3 subnet read_state", nil},
		{"v2 subnet read_state", []string{"v3 subnet read_state"}},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			n := startTwoSubnets(t, append(c.off, "v2 call")...) // v2 call only when asked for
			if c.endpoint == "v2 call" {
				delete(n.off, "v2 call")
			}
			a := n.agent(t)
			ctx := testContext(t)
			for _, canister := range []principal.Principal{principal.CanisterID(3), onApp} {
				if got, err := a.Call(ctx, canister, "echo_update", []byte("u")); err != nil || string(got) != "u" {
					t.Fatalf("call %s = %q, %v", canister, got, err)
				}
				if got, err := a.Query(ctx, canister, "echo", []byte("q")); err != nil || string(got) != "q" {
					t.Fatalf("query %s = %q, %v", canister, got, err)
				}
				if _, err := a.ReadState(ctx, canister, [][][]byte{certificate.Path("subnet")}); err != nil {
					t.Fatalf("read_state %s: %v", canister, err)
				}
			}
			for _, sid := range n.srv.SubnetIDs() {
				if _, err := a.ReadSubnetState(ctx, sid, [][][]byte{certificate.Path("time")}); err != nil {
					t.Fatalf("subnet read_state %s: %v", sid, err)
				}
			}
			if n.hitsOf(c.endpoint) == 0 {
				t.Errorf("%s was not used", c.endpoint)
			}
		})
	}
}

func TestTheSecondSubnetCertifiesUnderADelegationInTheLayoutOfEachVersion(t *testing.T) {
	n := startTwoSubnets(t)
	a := n.agent(t)
	ctx := testContext(t)
	root, err := a.RootKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, err := certificate.NewVerifier(root, certificate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := a.ReadState(ctx, onApp, [][][]byte{certificate.Path("time")})
	if err != nil {
		t.Fatal(err)
	}
	app := n.srv.SubnetIDs()[1]
	if cert.Delegation == nil || cert.Delegation.SubnetID != app {
		t.Fatalf("the second subnet's certificate has delegation %+v", cert.Delegation)
	}
	raw, _ := cert.Marshal()
	if err := v.VerifyDecoded(cert, certificate.ForCanisterIn(onApp, certificate.TreeRanges)); err != nil {
		t.Errorf("a v3 read_state's delegation has the sharded ranges: %v", err)
	}
	if _, err := v.Verify(raw, certificate.ForCanisterIn(onApp, certificate.FlatRanges)); !errors.Is(err, certificate.ErrNotAuthorized) {
		t.Errorf("a v3 read_state's delegation should carry no flat ranges: err = %v", err)
	}
	if _, err := v.Verify(raw, certificate.ForCanisterIn(principal.CanisterID(3), certificate.TreeRanges)); !errors.Is(err, certificate.ErrNotAuthorized) {
		t.Errorf("the second subnet is not authorized for the NNS canisters: err = %v", err)
	}
	if got, ok := n.srv.SubnetOf(localnet.RegistryID); !ok || got != n.srv.SubnetID() {
		t.Errorf("the registry is on %s, want the root subnet %s", got, n.srv.SubnetID())
	}
}

func TestTheStatusReportsTheCurrentInterfaceVersion(t *testing.T) {
	n := startTwoSubnets(t)
	st, err := n.agent(t).Status(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	if st.ICAPIVersion != localnet.APIVersion || st.ICAPIVersion == "0.18.0" {
		t.Errorf("ic_api_version = %q, want %q", st.ICAPIVersion, localnet.APIVersion)
	}
}

func newIdentity(t *testing.T) *identity.Ed25519 {
	t.Helper()
	id, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
