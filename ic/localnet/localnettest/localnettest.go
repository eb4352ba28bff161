// Package localnettest hosts the local NNS for a test: the registry and a
// governance that executes against it, behind the IC HTTP interface on a
// loopback server, with an agent that trusts its root key.
package localnettest

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

// Serve hosts the NNS over reg until the test ends, and returns the server
// and an agent (a fresh Ed25519 identity) that fetched its root key.
func Serve(t testing.TB, reg *registry.Registry) (*localnet.Server, *agent.Agent) {
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
