package localnet_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/identity"
	"alpnib.dev/ic/localnet"
	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

// TestTheAgentDrivesEveryNNSMethodAgainstTheLocalnet is the end-to-end
// proof: ic/agent, with the root key fetched from /api/v2/status and every
// certificate verified under it, and the ic/nns typed clients, against a
// localnet seeded with a small fleet.
func TestTheAgentDrivesEveryNNSMethodAgainstTheLocalnet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	me, err := identity.GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	subnet, member, spare, gone := pid("subnet"), pid("member"), pid("spare"), pid("gone")
	provider, operator, idle := pid("provider"), pid("operator"), pid("idle-operator")
	reg := registry.New()
	reg.AddDataCenter(registry.DataCenter{ID: "zh1", Region: "Europe,CH,Zurich"})
	reg.AddNodeOperator(registry.NodeOperator{ID: operator, Provider: provider, DataCenter: "zh1", NodeAllowance: 1})
	reg.AddNodeOperator(registry.NodeOperator{ID: idle, Provider: provider, DataCenter: "zh1"})
	for _, n := range []principal.Principal{member, spare, gone} {
		if _, err := reg.AddNode(registry.Node{ID: n, Operator: operator, IPv6: "::1"}); err != nil {
			t.Fatal(err)
		}
	}
	reg.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	reg.ElectVersion("v2", nns.ReplicaVersionRecordPB{})
	off := false
	if _, err := reg.AddSubnet(registry.Subnet{ID: subnet, ReplicaVersion: "v1", Members: []principal.Principal{member}, SevEnabled: &off}); err != nil {
		t.Fatal(err)
	}
	gov := governance.New(governance.Config{}, localnet.RegistryExecutor(reg))
	gov.AddNeuron(governance.Neuron{ID: 42, Controller: pid("cold wallet"), HotKeys: []principal.Principal{me.Sender()}, StakeE8s: 1})
	gov.AddNodeProvider(provider)
	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.InstallNNS(reg, gov)
	hs := httptest.NewServer(srv)
	defer hs.Close()

	a, err := agent.New(agent.Config{URL: hs.URL, Identity: me, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := a.Status(ctx)
	if err != nil || st.ImplVersion != localnet.ImplVersion || string(st.RootKey) != string(srv.RootKeyDER()) {
		t.Fatalf("status: %v %+v", err, st)
	}
	r, g := nns.RegistryClient{Caller: a}, nns.GovernanceClient{Caller: a}

	rec, err := r.GetSubnet(ctx, subnet)
	if err != nil || rec.ReplicaVersionID != "v1" || len(rec.Membership) != 1 {
		t.Fatalf("GetSubnet: %v %+v", err, rec)
	}
	ops, err := r.GetNodeOperatorsAndDcsOfNodeProvider(ctx, provider)
	if err != nil || len(ops) != 2 {
		t.Fatalf("operators: %v %d", err, len(ops))
	}
	if _, ok, err := r.ReplicaVersionRecord(ctx, "v2"); err != nil || !ok {
		t.Fatalf("v2 not elected: %v", err)
	}
	if _, ok, err := r.ReplicaVersionRecord(ctx, "v3"); err != nil || ok {
		t.Fatalf("v3 elected: %v", err)
	}
	if n, ok, err := r.NodeRecord(ctx, member); err != nil || !ok || string(n.NodeOperatorID) != string(operator.Bytes()) {
		t.Fatalf("node record: %v %v", ok, err)
	}
	if o, ok, err := r.NodeOperatorRecord(ctx, operator); err != nil || !ok || o.DcID != "zh1" {
		t.Fatalf("operator record: %v %v", ok, err)
	}
	if d, ok, err := r.DataCenterRecord(ctx, "zh1"); err != nil || !ok || d.Region != "Europe,CH,Zurich" {
		t.Fatalf("data center record: %v %v", ok, err)
	}
	if s, ok, err := r.SubnetRecord(ctx, subnet); err != nil || !ok || s.ReplicaVersionID != "v1" {
		t.Fatalf("subnet record: %v %v", ok, err)
	}

	seeded := reg.Version()
	if n, err := g.GetFullNeuron(ctx, 42); err != nil || len(n.HotKeys) != 1 || n.HotKeys[0] != me.Sender() {
		t.Fatalf("GetFullNeuron as a hotkey: %v", err)
	}
	var gerr *nns.GovernanceError
	if _, err := g.GetFullNeuron(ctx, 7); !errors.As(err, &gerr) || gerr.ErrorType != nns.ErrorTypeNotFound {
		t.Fatalf("unknown neuron: %v", err)
	}
	if nps, err := g.ListNodeProviders(ctx); err != nil || len(nps) != 1 || *nps[0].ID != provider {
		t.Fatalf("ListNodeProviders: %v %+v", err, nps)
	}

	propose := func(fn nns.NnsFunction, payload any) *nns.ProposalInfo {
		t.Helper()
		b, err := candid.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		title := "Proposal " + fn.String()
		id, err := g.MakeProposal(ctx, 42, nns.MakeProposalRequest{Title: &title, Summary: "from the test",
			Action: &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: b}}})
		if err != nil {
			t.Fatalf("MakeProposal %s: %v", fn, err)
		}
		info, err := g.GetProposalInfo(ctx, id)
		if err != nil || info == nil {
			t.Fatalf("GetProposalInfo %d: %v", id, err)
		}
		return info
	}
	expect := func(info *nns.ProposalInfo, want nns.ProposalStatus, reason string) {
		t.Helper()
		if nns.ProposalStatus(info.Status) != want {
			t.Fatalf("proposal %d is %s, want %s (%+v)", info.ID.ID, nns.ProposalStatus(info.Status), want, info.FailureReason)
		}
		if reason != "" && (info.FailureReason == nil || !strings.Contains(info.FailureReason.ErrorMessage, reason)) {
			t.Fatalf("proposal %d failure %+v, want %q", info.ID.ID, info.FailureReason, reason)
		}
	}
	expect(propose(nns.FunctionChangeSubnetMembership, nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsAdd: []principal.Principal{spare}, NodeIDsRemove: []principal.Principal{member}}), nns.StatusExecuted, "")
	expect(propose(nns.FunctionChangeSubnetMembership, nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsRemove: []principal.Principal{member}}), nns.StatusFailed, "do not belong to the provided subnet")
	expect(propose(nns.FunctionDeployGuestosToAllSubnetNodes, nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnet, ReplicaVersionID: "v2"}), nns.StatusExecuted, "")
	expect(propose(nns.FunctionDeployGuestosToAllSubnetNodes, nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnet, ReplicaVersionID: "v3"}), nns.StatusFailed, "NOT elected")
	halted, sev := true, true
	expect(propose(nns.FunctionUpdateConfigOfSubnet, nns.UpdateSubnetPayload{SubnetID: subnet, IsHalted: &halted}), nns.StatusExecuted, "")
	expect(propose(nns.FunctionUpdateConfigOfSubnet, nns.UpdateSubnetPayload{SubnetID: subnet, Features: &nns.SubnetFeatures{SevEnabled: &sev}}), nns.StatusFailed, "sev_enabled")
	expect(propose(nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{spare}}), nns.StatusFailed, "is a member of a subnet")
	expect(propose(nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{gone}}), nns.StatusExecuted, "")
	expect(propose(nns.FunctionRemoveNodeOperators, nns.RemoveNodeOperatorsPayload{NodeOperatorsToRemove: [][]byte{operator.Bytes(), idle.Bytes()}}), nns.StatusExecuted, "")
	if _, ok, _ := r.NodeOperatorRecord(ctx, operator); !ok {
		t.Fatal("an operator with nodes was removed")
	}
	if _, ok, _ := r.NodeOperatorRecord(ctx, idle); ok {
		t.Fatal("the idle operator is still there")
	}
	rec, _ = r.GetSubnet(ctx, subnet)
	if rec.ReplicaVersionID != "v2" || !rec.IsHalted || len(rec.Membership) != 1 || string(rec.Membership[0]) != string(spare.Bytes()) {
		t.Fatalf("subnet after the proposals: %+v", rec)
	}

	changes, latest, err := r.GetChangesSince(ctx, seeded)
	if err != nil || latest != reg.Version() {
		t.Fatalf("GetChangesSince: %v", err)
	}
	deleted, subnetChanges := false, 0
	for _, c := range changes {
		if c.Key == nns.NodeRecordKey(gone.String()) && c.Deleted && c.Version > seeded {
			deleted = true
		}
		if c.Key == nns.SubnetRecordKey(subnet.String()) {
			subnetChanges++
		}
	}
	if subnetChanges != 3 { // membership, version, halt
		t.Fatalf("subnet record changed %d times since seeding, want 3", subnetChanges)
	}
	if !deleted {
		t.Fatal("get_changes_since does not show node gone's deletion")
	}

	removal := func(id principal.Principal) *nns.ProposalInfo {
		t.Helper()
		title := "Remove a node provider"
		pid, err := g.MakeProposal(ctx, 42, nns.MakeProposalRequest{Title: &title,
			Action: &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &id}}}}})
		if err != nil {
			t.Fatal(err)
		}
		info, err := g.GetProposalInfo(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	expect(removal(pid("stranger")), nns.StatusFailed, "Can't find a NodeProvider")
	expect(removal(provider), nns.StatusExecuted, "")
	if nps, _ := g.ListNodeProviders(ctx); len(nps) != 0 {
		t.Fatalf("providers after removal: %+v", nps)
	}

	all, err := g.ListProposals(ctx, nns.ListProposalInfo{Limit: 100})
	if err != nil || len(all) != 11 || all[0].ID.ID != 11 {
		t.Fatalf("ListProposals: %v %d", err, len(all))
	}
	failed, err := g.ListProposals(ctx, nns.ListProposalInfo{Limit: 100, IncludeStatus: []int32{int32(nns.StatusFailed)}})
	if err != nil || len(failed) != 5 {
		t.Fatalf("failed proposals: %v %d", err, len(failed))
	}
	if info, err := g.GetProposalInfo(ctx, 999); err != nil || info != nil {
		t.Fatalf("unknown proposal: %v %+v", err, info)
	}

	// Someone who is neither controller nor hotkey is refused by governance.
	stranger, _ := identity.GenerateEd25519(rand.Reader)
	sa, _ := agent.New(agent.Config{URL: hs.URL, Identity: stranger, FetchRootKey: true})
	title := "Not mine to propose"
	if _, err := (nns.GovernanceClient{Caller: sa}).MakeProposal(ctx, 42, nns.MakeProposalRequest{Title: &title,
		Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "x"}}}); !errors.As(err, &gerr) || gerr.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Fatalf("a stranger's proposal: %v", err)
	}
	// An agent trusting another root key refuses the localnet's certificates.
	other, _ := localnet.New(localnet.Options{})
	wrong, _ := agent.New(agent.Config{URL: hs.URL, Identity: me, RootKey: other.RootKeyDER()})
	if _, err := (nns.GovernanceClient{Caller: wrong}).MakeProposal(ctx, 42, nns.MakeProposalRequest{Title: &title,
		Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "x"}}}); err == nil {
		t.Fatal("a certificate under another root key was accepted")
	}
}

// TestConcurrentProposalsGetDistinctIdsAndAllExecute runs many agents at
// once against one localnet (run with -race).
func TestConcurrentProposalsGetDistinctIdsAndAllExecute(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gov := governance.New(governance.Config{}, localnet.RegistryExecutor(registry.New()))
	srv, err := localnet.New(localnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv.InstallNNS(registry.New(), gov)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	const n = 16
	ids := make(chan uint64, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		id, _ := identity.GenerateEd25519(rand.Reader)
		gov.AddNeuron(governance.Neuron{ID: uint64(100 + i), Controller: id.Sender(), StakeE8s: 1})
		go func(neuron uint64) {
			a, err := agent.New(agent.Config{URL: hs.URL, Identity: id, FetchRootKey: true})
			if err != nil {
				errs <- err
				return
			}
			title := "A concurrent motion"
			pid, err := nns.GovernanceClient{Caller: a}.MakeProposal(ctx, neuron, nns.MakeProposalRequest{Title: &title,
				Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "go"}}})
			if err != nil {
				errs <- err
				return
			}
			ids <- pid
		}(uint64(100 + i))
	}
	seen := map[uint64]bool{}
	for i := 0; i < n; i++ {
		select {
		case err := <-errs:
			t.Fatal(err)
		case id := <-ids:
			if seen[id] {
				t.Fatalf("proposal id %d assigned twice", id)
			}
			seen[id] = true
		}
	}
	for id := range seen {
		if p := gov.ProposalInfo(id); nns.ProposalStatus(p.Status) != nns.StatusExecuted {
			t.Fatalf("proposal %d: %s", id, nns.ProposalStatus(p.Status))
		}
	}
}
