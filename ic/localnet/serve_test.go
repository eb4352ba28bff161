package localnet_test

import (
	"crypto/rand"
	"net/http/httptest"
	"testing"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
)

// serveRegistry hosts the NNS over reg (with a governance that executes
// against it) on a loopback HTTP server for the test, and returns the server
// and an agent that fetched its root key.
func serveRegistry(t testing.TB, reg *registry.Registry) (*localnet.Server, *agent.Agent) {
	t.Helper()
	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.InstallNNS(reg, governance.New(governance.Config{}, localnet.RegistryExecutor(reg)))
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	me, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{URL: hs.URL, Identity: me, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	return srv, a
}
