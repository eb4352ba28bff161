package dryrun

import (
	"context"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// BenchmarkDryRun is one whole dry run of a membership change: gather the
// seed from the (in-process) live registry, start a fresh local NNS, make
// the proposal through the IC HTTP interface and read it back.
func BenchmarkDryRun(b *testing.B) {
	_, live := liveNetwork(b)
	p := registryProposal(b, config.KindMembership, nns.FunctionChangeSubnetMembership,
		nns.ChangeSubnetMembershipPayload{SubnetID: s1, NodeIDsAdd: []principal.Principal{n(4)}, NodeIDsRemove: []principal.Principal{}})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		seed, err := Gather(ctx, live, p)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Run(ctx, seed, p, 42)
		if err != nil || res.Failed() {
			b.Fatal(err, res.FailureReason)
		}
	}
}
