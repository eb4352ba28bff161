package preflight

import (
	"context"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
)

// BenchmarkPreflight runs the fetch and the checks of one proposal per kind
// against the devnet on loopback: the cost is the certified queries (and the
// explorer/dashboard reads) a preflight makes.
func BenchmarkPreflight(b *testing.B) {
	_, f := startDevnetB(b)
	for _, tc := range []struct {
		name string
		p    *config.Proposal
	}{
		{"membership", &config.Proposal{Name: "m", Kind: config.KindMembership, Body: &kinds.Membership{SubnetID: subnet, Add: refs(n2)}}},
		{"deploy_guestos", deploy("v2")},
		{"update_subnet", &config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: &kinds.UpdateSubnet{SubnetID: subnet, MaxNumberOfCanisters: ptr(uint64(9))}}},
		{"remove_node_operators", &config.Proposal{Name: "o", Kind: config.KindRemoveNodeOperators, Body: &kinds.RemoveNodeOperators{Operators: []string{id("op")}}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := f.Run(context.Background(), tc.p, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluateUpdateSubnet is the pure diff of every update_subnet
// field against a live record.
func BenchmarkEvaluateUpdateSubnet(b *testing.B) {
	u := &kinds.UpdateSubnet{SubnetID: subnet, IsHalted: ptr(true), MaxNumberOfCanisters: ptr(uint64(9)),
		SSHReadonlyAccess: &[]string{"a", "b"}, SSHBackupAccess: &[]string{"c"}, SubnetAdmins: &[]string{n1},
		Features: &kinds.Features{HTTPRequests: true}, ResourceLimits: &kinds.ResourceLimits{MaximumStateSize: 1, MaximumStateDelta: 2},
		UnitDelayMillis: ptr(uint64(1)), InitialNotaryDelayMillis: ptr(uint64(1)), DKGIntervalLength: ptr(uint64(1)),
		DKGDealingsPerBlock: ptr(uint64(1)), MaxIngressBytesPerMessage: ptr(uint64(1)), MaxIngressBytesPerBlock: ptr(uint64(1)),
		MaxIngressMessagesPerBlock: ptr(uint64(1)), MaxBlockPayloadSize: ptr(uint64(1))}
	p := &config.Proposal{Name: "u", Kind: config.KindUpdateSubnet, Body: u}
	live := factsOf(kinds.UpdateSubnetFacts{Subnet: subnetWith("v1", n1, n2)})
	names := map[string]string{n1: "n1", subnet: "app"}
	for b.Loop() {
		Evaluate(p, live, Options{Names: names})
	}
}
