package localnet_test

import (
	"context"
	"testing"
	"time"

	"alpnib.dev/ic/localnet/localnettest"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
)

func TestTheRegistryLatestVersionMovesWithEveryMutation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reg := registry.New()
	reg.AddDataCenter(registry.DataCenter{ID: "zh1", Region: "Europe,CH,Zurich"})
	_, a := localnettest.Serve(t, reg)
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
