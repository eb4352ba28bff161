package dryrun

import (
	"context"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// The live network of these tests: provider P with operators opA (nodes
// n1..n4) and opB (node n5); subnet s1 = {n1, n2} running v1 without SEV,
// subnet s2 = {n3}; n4 and n5 in no subnet; v1 and v2 elected, v3 not.
var (
	provider = principal.SelfAuthenticating([]byte("provider"))
	opA      = principal.SelfAuthenticating([]byte("operator a"))
	opB      = principal.SelfAuthenticating([]byte("operator b"))
	opEmpty  = principal.SelfAuthenticating([]byte("operator without nodes"))
	s1       = principal.SelfAuthenticating([]byte("subnet 1"))
	s2       = principal.SelfAuthenticating([]byte("subnet 2"))
	n        = func(i int) principal.Principal { return principal.SelfAuthenticating([]byte{'n', byte(i)}) }
)

type liveRegistry struct{ *registry.Registry }

func (l liveRegistry) GetValue(_ context.Context, key string, version uint64) ([]byte, uint64, bool, error) {
	if version != 0 {
		v, at, ok := l.GetAt(key, version)
		return v, at, ok, nil
	}
	v, at, ok := l.Get(key)
	return v, at, ok, nil
}

type liveGovernance []principal.Principal

func (g liveGovernance) ListNodeProviders(context.Context) ([]nns.NodeProvider, error) {
	var out []nns.NodeProvider
	for _, p := range g {
		out = append(out, nns.NodeProvider{ID: &p})
	}
	return out, nil
}

func liveNetwork(t testing.TB) (*registry.Registry, Live) {
	t.Helper()
	reg := registry.New()
	reg.AddNodeOperator(registry.NodeOperator{ID: opA, Provider: provider, NodeAllowance: 1})
	reg.AddNodeOperator(registry.NodeOperator{ID: opB, Provider: provider})
	reg.AddNodeOperator(registry.NodeOperator{ID: opEmpty, Provider: provider})
	for i := 1; i <= 5; i++ {
		op := opA
		if i == 5 {
			op = opB
		}
		if _, err := reg.AddNode(registry.Node{ID: n(i), Operator: op, IPv6: "2001:db8::1"}); err != nil {
			t.Fatal(err)
		}
	}
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	reg.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	off := false
	if _, err := reg.AddSubnet(registry.Subnet{ID: s1, ReplicaVersion: "v1", Members: []principal.Principal{n(1), n(2)}, SevEnabled: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.AddSubnet(registry.Subnet{ID: s2, ReplicaVersion: "v1", Members: []principal.Principal{n(3)}}); err != nil {
		t.Fatal(err)
	}
	live := Live{
		Registry:   liveRegistry{reg},
		Governance: liveGovernance{provider},
		OperatorNodes: func(_ context.Context, op string) ([]string, error) {
			p := principal.MustDecode(op)
			ids, err := reg.NodesOfOperator(p)
			var out []string
			for _, id := range ids {
				out = append(out, id.String())
			}
			return out, err
		},
	}
	return reg, live
}

// registryProposal is a proposal running fn with payload, as
// proposal.Build makes one.
func registryProposal(t testing.TB, kind config.Kind, fn nns.NnsFunction, payload any) *proposal.Proposal {
	t.Helper()
	b, err := candid.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return &proposal.Proposal{Name: "test", Kind: kind, Title: "a dry run test", Function: fn, Payload: b,
		Action: &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: b}}}
}

func dryRun(t *testing.T, live Live, p *proposal.Proposal) *Result {
	t.Helper()
	ctx := context.Background()
	seed, err := Gather(ctx, live, p)
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	res, err := Run(ctx, seed, p, 42)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func wantFailure(t *testing.T, res *Result, reason string) {
	t.Helper()
	if !res.Failed() || !strings.Contains(res.FailureReason, reason) || res.Err() == nil {
		t.Fatalf("dry run = %s %q, want a failure saying %q", res.Status, res.FailureReason, reason)
	}
}

func TestASevEnabledChangeFailsTheDryRunWithTheRegistrysReason(t *testing.T) {
	_, live := liveNetwork(t)
	on := true
	p := registryProposal(t, config.KindUpdateSubnet, nns.FunctionUpdateConfigOfSubnet,
		nns.UpdateSubnetPayload{SubnetID: s1, Features: &nns.SubnetFeatures{SevEnabled: &on}})
	wantFailure(t, dryRun(t, live, p), "Proposal attempts to change sev_enabled for Subnet '"+s1.String()+"' from false to true")
}

func TestAnUpdateThatLeavesSevAloneExecutes(t *testing.T) {
	_, live := liveNetwork(t)
	halt := true
	p := registryProposal(t, config.KindUpdateSubnet, nns.FunctionUpdateConfigOfSubnet,
		nns.UpdateSubnetPayload{SubnetID: s1, IsHalted: &halt})
	res := dryRun(t, live, p)
	if res.Failed() || len(res.Changes) != 1 || res.Changes[0].Key != nns.SubnetRecordKey(s1.String()) {
		t.Fatalf("dry run = %+v", res)
	}
}

func TestRemovingAMemberOfAnySubnetWithRemoveNodesFailsTheDryRun(t *testing.T) {
	_, live := liveNetwork(t)
	// n3 is a member of s2, which the proposal does not name: only seeding
	// every subnet's membership catches it
	p := registryProposal(t, config.KindRemoveNodes, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n(4), n(3)}})
	wantFailure(t, dryRun(t, live, p), "Cannot remove a node that is a member of a subnet. This node is a member of Subnet: "+nns.SubnetRecordKey(s2.String()))
}

func TestRemovingAFreeNodeDeletesItAndGivesItsOperatorAnAllowanceBack(t *testing.T) {
	_, live := liveNetwork(t)
	p := registryProposal(t, config.KindRemoveNodes, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n(4)}})
	res := dryRun(t, live, p)
	want := []Change{{Key: nns.NodeOperatorRecordKey(opA.String())}, {Key: nns.NodeRecordKey(n(4).String()), Deleted: true}}
	if res.Failed() || len(res.Changes) != 2 || res.Changes[0] != want[0] || res.Changes[1] != want[1] {
		t.Fatalf("dry run = %+v, want changes %+v", res, want)
	}
}

func TestDeployingAnUnelectedVersionFailsTheDryRun(t *testing.T) {
	_, live := liveNetwork(t)
	p := registryProposal(t, config.KindDeployGuestOS, nns.FunctionDeployGuestosToAllSubnetNodes,
		nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: s1, ReplicaVersionID: "v3"})
	wantFailure(t, dryRun(t, live, p), `Replica version 'v3' is NOT elected`)
}

func TestDeployingAnElectedVersionExecutes(t *testing.T) {
	_, live := liveNetwork(t)
	p := registryProposal(t, config.KindDeployGuestOS, nns.FunctionDeployGuestosToAllSubnetNodes,
		nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: s1, ReplicaVersionID: "v2"})
	if res := dryRun(t, live, p); res.Failed() {
		t.Fatalf("dry run failed: %s", res.FailureReason)
	}
}

func TestTheSeedIsReadAtTheRegistryVersionGiven(t *testing.T) {
	reg, live := liveNetwork(t)
	before := reg.Version()
	reg.ElectVersion("v9", nns.ReplicaVersionRecordPB{ReleasePackageSha256Hex: "00"})
	p := registryProposal(t, config.KindDeployGuestOS, nns.FunctionDeployGuestosToAllSubnetNodes,
		nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: s1, ReplicaVersionID: "v9"})
	live.Version = before
	res := dryRun(t, live, p)
	wantFailure(t, res, `Replica version 'v9' is NOT elected`)
	if res.RegistryVersion != before {
		t.Fatalf("result says registry version %d, want %d", res.RegistryVersion, before)
	}
	live.Version = 0
	if res := dryRun(t, live, p); res.Failed() {
		t.Fatalf("at the latest version: %s", res.FailureReason)
	}
}

func TestTheDryRunChecksTheRegistrysInvariantsOnTheSubnetItWrites(t *testing.T) {
	_, live := liveNetwork(t)
	halt := true
	admins := []principal.Principal{principal.SelfAuthenticating([]byte("admin"))}
	// Seeded with the subnet's members, a plain update executes...
	ok := registryProposal(t, config.KindUpdateSubnet, nns.FunctionUpdateConfigOfSubnet, nns.UpdateSubnetPayload{SubnetID: s1, IsHalted: &halt})
	if res := dryRun(t, live, ok); res.Failed() {
		t.Fatalf("halting s1: %s", res.FailureReason)
	}
	// ...and admins on a subnet that is not rented fail as on the NNS.
	bad := registryProposal(t, config.KindUpdateSubnet, nns.FunctionUpdateConfigOfSubnet, nns.UpdateSubnetPayload{SubnetID: s1, SubnetAdmins: &admins})
	wantFailure(t, dryRun(t, live, bad), "Subnet "+s1.String()+" is not a rented or cloud engine subnet but has a non-empty subnet admins list")
}

func TestAddingAMemberOfAnotherSubnetFailsAndAFreeNodeExecutes(t *testing.T) {
	_, live := liveNetwork(t)
	bad := registryProposal(t, config.KindMembership, nns.FunctionChangeSubnetMembership,
		nns.ChangeSubnetMembershipPayload{SubnetID: s1, NodeIDsAdd: []principal.Principal{n(3)}, NodeIDsRemove: []principal.Principal{}})
	wantFailure(t, dryRun(t, live, bad), "Subnet "+s2.String()+" already contains some members that are to be added")
	good := registryProposal(t, config.KindMembership, nns.FunctionChangeSubnetMembership,
		nns.ChangeSubnetMembershipPayload{SubnetID: s1, NodeIDsAdd: []principal.Principal{n(4)}, NodeIDsRemove: []principal.Principal{n(1)}})
	if res := dryRun(t, live, good); res.Failed() {
		t.Fatalf("dry run failed: %s", res.FailureReason)
	}
}

func TestAnOperatorThatStillOwnsNodesIsAWarningBecauseTheRegistrySkipsIt(t *testing.T) {
	_, live := liveNetwork(t)
	p := registryProposal(t, config.KindRemoveNodeOperators, nns.FunctionRemoveNodeOperators,
		nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{}, NodeOperatorPrincipalsToRemove: &nns.NodeOperatorPrincipals{Principals: []principal.Principal{opEmpty, opB}}})
	res := dryRun(t, live, p)
	if res.Failed() {
		t.Fatalf("dry run failed: %s", res.FailureReason)
	}
	if len(res.Changes) != 1 || res.Changes[0] != (Change{Key: nns.NodeOperatorRecordKey(opEmpty.String()), Deleted: true}) {
		t.Errorf("changes = %+v, want only %s deleted", res.Changes, opEmpty)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], opB.String()+": it still owns 1 node") {
		t.Errorf("warnings = %q", res.Warnings)
	}
}

func TestWithoutAnOperatorNodeListTheSeedSaysWhatItCouldNotCheck(t *testing.T) {
	_, live := liveNetwork(t)
	live.OperatorNodes = nil
	p := registryProposal(t, config.KindRemoveNodeOperators, nns.FunctionRemoveNodeOperators,
		nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{opB.Bytes()}})
	res := dryRun(t, live, p)
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "not caught here") {
		t.Fatalf("notes = %q", res.Notes)
	}
}

func providerProposal(id principal.Principal) *proposal.Proposal {
	action := nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &id}}}
	b, _ := candid.Marshal(action)
	return &proposal.Proposal{Name: "test", Kind: config.KindRemoveNodeProvider, Title: "remove a provider", Payload: b,
		Action: &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &action}}
}

func TestRemovingAProviderGovernanceDoesNotKnowFailsTheDryRun(t *testing.T) {
	_, live := liveNetwork(t)
	wantFailure(t, dryRun(t, live, providerProposal(opA)), "Can't find a NodeProvider")
	if res := dryRun(t, live, providerProposal(provider)); res.Failed() {
		t.Fatalf("removing a known provider failed: %s", res.FailureReason)
	}
}

func TestTheDryRunNeverWritesTheLiveRegistry(t *testing.T) {
	reg, live := liveNetwork(t)
	before := reg.Version()
	p := registryProposal(t, config.KindRemoveNodes, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n(4)}})
	dryRun(t, live, p)
	if reg.Version() != before {
		t.Fatalf("live registry moved from version %d to %d", before, reg.Version())
	}
}

func TestAProposalGovernanceRefusesFailsTheDryRun(t *testing.T) {
	_, live := liveNetwork(t)
	p := registryProposal(t, config.KindRemoveNodes, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{n(4)}})
	p.Title = "x" // governance wants 5 to 256 characters
	wantFailure(t, dryRun(t, live, p), "title")
}
