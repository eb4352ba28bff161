package localnet_test

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

func TestTheRegistryLatestVersionMovesWithEveryMutation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := registry.New()
	reg.AddDataCenter(registry.DataCenter{ID: "zh1", Region: "Europe,CH,Zurich"})
	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.InstallNNS(reg, governance.New(governance.Config{}, localnet.RegistryExecutor(reg)))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	me, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{URL: hs.URL, Identity: me, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	r := nns.RegistryClient{Caller: a}
	before, err := r.GetLatestVersion(ctx)
	if err != nil || before != reg.Version() || before == 0 {
		t.Fatalf("latest version %d (%v), registry says %d", before, err, reg.Version())
	}
	reg.ElectVersion("v9", nns.ReplicaVersionRecordPB{})
	after, err := r.GetLatestVersion(ctx)
	if err != nil || after <= before || after != reg.Version() {
		t.Fatalf("after a mutation: %d (%v), was %d", after, err, before)
	}
}
