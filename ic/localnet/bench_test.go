package localnet_test

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func benchNetwork(b *testing.B) (*agent.Agent, principal.Principal) {
	b.Helper()
	me, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.New()
	op := pid("op")
	reg.AddNodeOperator(registry.NodeOperator{ID: op, Provider: pid("np"), DataCenter: "dc"})
	var members []principal.Principal
	for i := 0; i < 13; i++ {
		n := pid("node" + string(rune('a'+i)))
		if _, err := reg.AddNode(registry.Node{ID: n, Operator: op, IPv6: "::1"}); err != nil {
			b.Fatal(err)
		}
		members = append(members, n)
	}
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	subnet := pid("subnet")
	if _, err := reg.AddSubnet(registry.Subnet{ID: subnet, ReplicaVersion: "v1", Members: members}); err != nil {
		b.Fatal(err)
	}
	gov := governance.New(governance.Config{}, localnet.RegistryExecutor(reg))
	gov.AddNeuron(governance.Neuron{ID: 1, Controller: me.Sender(), StakeE8s: 1})
	s, err := localnet.New(localnet.Options{})
	if err != nil {
		b.Fatal(err)
	}
	s.InstallNNS(reg, gov)
	hs := httptest.NewServer(s)
	b.Cleanup(hs.Close)
	a, err := agent.New(agent.Config{URL: hs.URL, Identity: me, FetchRootKey: true})
	if err != nil {
		b.Fatal(err)
	}
	if err := a.FetchRootKey(context.Background()); err != nil {
		b.Fatal(err)
	}
	return a, subnet
}

// BenchmarkGetSubnetQuery is one signed get_subnet query of a 13-node
// subnet through ic/agent and the localnet over loopback HTTP.
func BenchmarkGetSubnetQuery(b *testing.B) {
	a, subnet := benchNetwork(b)
	r := nns.RegistryClient{Caller: a}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.GetSubnet(ctx, subnet); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMakeProposalCall is one synchronous manage_neuron update call
// that files and executes a motion: envelope check, BLS-signed certificate
// on the replica side, BLS verification on the agent side.
func BenchmarkMakeProposalCall(b *testing.B) {
	a, _ := benchNetwork(b)
	g := nns.GovernanceClient{Caller: a}
	ctx := context.Background()
	title := "A benchmark motion"
	req := nns.MakeProposalRequest{Title: &title, Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "go"}}}
	if _, err := candid.Marshal(req); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := g.MakeProposal(ctx, 1, req); err != nil {
			b.Fatal(err)
		}
	}
}
