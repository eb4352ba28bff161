package governance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

func pid(tag string) principal.Principal { return principal.SelfAuthenticating([]byte(tag)) }

var (
	controller = pid("controller")
	hotkey     = pid("hotkey")
	stranger   = pid("stranger")
	providerA  = pid("provider-a")
	subnet     = pid("subnet")
	operator   = pid("operator")
	member     = pid("member")
	spare      = pid("spare")
)

// jsonExecutor stands in for the Candid adapter: the payload bytes are
// opaque to governance, so the rules can be exercised through it with any
// encoding.
func jsonExecutor(r *registry.Registry) Executor {
	return ExecutorFunc(func(fn nns.NnsFunction, payload []byte) error {
		switch fn {
		case nns.FunctionChangeSubnetMembership:
			var p nns.ChangeSubnetMembershipPayload
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return r.ChangeSubnetMembership(p)
		case nns.FunctionDeployGuestosToAllSubnetNodes:
			var p nns.DeployGuestosToAllSubnetNodesPayload
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return r.DeployGuestosToAllSubnetNodes(p)
		case nns.FunctionRemoveNodes:
			var p nns.RemoveNodesPayload
			if err := json.Unmarshal(payload, &p); err != nil {
				return err
			}
			return r.RemoveNodes(p)
		}
		return fmt.Errorf("unsupported function %s", fn)
	})
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func setup(t *testing.T, period time.Duration) (*Governance, *registry.Registry, *clock) {
	t.Helper()
	r := registry.New()
	r.AddNodeOperator(registry.NodeOperator{ID: operator, Provider: providerA, DataCenter: "dc"})
	for _, n := range []principal.Principal{member, spare} {
		if _, err := r.AddNode(registry.Node{ID: n, Operator: operator, IPv6: "::1"}); err != nil {
			t.Fatal(err)
		}
	}
	r.ElectVersion("v1", nns.ReplicaVersionRecordPB{})
	if _, err := r.AddSubnet(registry.Subnet{ID: subnet, ReplicaVersion: "v1", Members: []principal.Principal{member}}); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	g := New(Config{VotingPeriod: period, Now: c.now}, jsonExecutor(r))
	g.AddNeuron(Neuron{ID: 42, Controller: controller, HotKeys: []principal.Principal{hotkey}, StakeE8s: 100})
	g.AddNeuron(Neuron{ID: 7, Controller: stranger, StakeE8s: 1000})
	g.AddNodeProvider(providerA)
	return g, r, c
}

func title(s string) *string { return &s }

func nnsFunction(t *testing.T, fn nns.NnsFunction, payload any) nns.MakeProposalRequest {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return nns.MakeProposalRequest{Title: title("A local proposal"), Summary: "s",
		Action: &nns.ProposalActionRequest{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: b}}}
}

func removeProvider(id principal.Principal) nns.MakeProposalRequest {
	return nns.MakeProposalRequest{Title: title("Remove a provider"),
		Action: &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{
			Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &id}}}}}
}

func TestOnlyTheControllerOrAHotkeyMayProposeWithANeuron(t *testing.T) {
	g, _, _ := setup(t, 0)
	req := removeProvider(pid("whoever"))
	for _, caller := range []principal.Principal{controller, hotkey} {
		if _, err := g.MakeProposal(caller, 42, req); err != nil {
			t.Errorf("%s: %v", caller, err)
		}
	}
	if _, err := g.MakeProposal(stranger, 42, req); err == nil || err.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Errorf("stranger: %v", err)
	}
	if _, err := g.MakeProposal(controller, 999, req); err == nil || err.ErrorType != nns.ErrorTypeNotFound {
		t.Errorf("unknown neuron: %v", err)
	}
	resp := g.ManageNeuron(stranger, nns.ManageNeuronRequest{ID: &nns.NeuronID{ID: 42}, Command: &nns.ManageNeuronCommandRequest{MakeProposal: &req}})
	if resp.Command == nil || resp.Command.Error == nil || resp.Command.Error.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Errorf("manage_neuron from a stranger answered %+v", resp.Command)
	}
}

func TestAnAddOrRemoveNodeProviderIsCheckedAsGovernanceChecksIt(t *testing.T) {
	id := pid("nobody")
	for _, c := range []struct {
		name   string
		change *nns.Change
		want   string
	}{
		{"no change is refused", nil, "AddOrRemoveNodeProvider proposal must have a change field"},
		{"an empty change is refused", &nns.Change{}, "must have a change field"},
		{"a provider without an id is refused", &nns.Change{ToRemove: &nns.NodeProvider{}}, "AddOrRemoveNodeProvider proposal must have a node provider id"},
		{"two changes are refused before a missing id", &nns.Change{ToAdd: &nns.NodeProvider{}, ToRemove: &nns.NodeProvider{ID: &id}}, "not both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, _, _ := setup(t, 0)
			req := nns.MakeProposalRequest{Title: title("Change a provider"), Action: &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: c.change}}}
			_, err := g.MakeProposal(hotkey, 42, req)
			if err == nil || err.ErrorType != nns.ErrorTypeInvalidProposal || !strings.Contains(err.ErrorMessage, c.want) {
				t.Fatalf("err = %+v, want InvalidProposal %q", err, c.want)
			}
		})
	}
}

func TestAProposalOfEachKindExecutesOrFailsAsTheRegistryRules(t *testing.T) {
	cases := []struct {
		name   string
		req    func(t *testing.T) nns.MakeProposalRequest
		status nns.ProposalStatus
		reason string
		topic  nns.Topic
	}{
		{"membership with a free node executes", func(t *testing.T) nns.MakeProposalRequest {
			return nnsFunction(t, nns.FunctionChangeSubnetMembership, nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsAdd: []principal.Principal{spare}})
		}, nns.StatusExecuted, "", nns.TopicSubnetManagement},
		{"membership removing a non-member fails", func(t *testing.T) nns.MakeProposalRequest {
			return nnsFunction(t, nns.FunctionChangeSubnetMembership, nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsRemove: []principal.Principal{spare}})
		}, nns.StatusFailed, "do not belong to the provided subnet", nns.TopicSubnetManagement},
		{"deploying an unelected version fails", func(t *testing.T) nns.MakeProposalRequest {
			return nnsFunction(t, nns.FunctionDeployGuestosToAllSubnetNodes, nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnet, ReplicaVersionID: "v9"})
		}, nns.StatusFailed, "NOT elected", nns.TopicIcOsVersionDeployment},
		{"removing a subnet member fails", func(t *testing.T) nns.MakeProposalRequest {
			return nnsFunction(t, nns.FunctionRemoveNodes, nns.RemoveNodesPayload{NodeIDs: []principal.Principal{member}})
		}, nns.StatusFailed, "is a member of a subnet", nns.TopicNodeAdmin},
		{"removing a known provider executes", func(*testing.T) nns.MakeProposalRequest { return removeProvider(providerA) }, nns.StatusExecuted, "", nns.TopicParticipantManagement},
		{"removing an unknown provider fails", func(*testing.T) nns.MakeProposalRequest { return removeProvider(pid("nobody")) }, nns.StatusFailed, "Can't find a NodeProvider with the same principal id.", nns.TopicParticipantManagement},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, _, clk := setup(t, 0)
			id, err := g.MakeProposal(hotkey, 42, c.req(t))
			if err != nil {
				t.Fatal(err)
			}
			p := g.ProposalInfo(id)
			if nns.ProposalStatus(p.Status) != c.status || nns.Topic(p.Topic) != c.topic {
				t.Fatalf("status %s topic %s, want %s %s (failure %+v)", nns.ProposalStatus(p.Status), nns.Topic(p.Topic), c.status, c.topic, p.FailureReason)
			}
			now := uint64(clk.t.Unix())
			if c.status == nns.StatusFailed {
				if p.FailureReason == nil || !strings.Contains(p.FailureReason.ErrorMessage, c.reason) || p.FailedTimestampSeconds != now {
					t.Fatalf("failure = %+v at %d", p.FailureReason, p.FailedTimestampSeconds)
				}
			} else if p.ExecutedTimestampSeconds != now || p.FailureReason != nil {
				t.Fatalf("executed at %d, failure %+v", p.ExecutedTimestampSeconds, p.FailureReason)
			}
			if p.DecidedTimestampSeconds != now || p.Proposer.ID != 42 || p.LatestTally.Yes != p.LatestTally.Total {
				t.Fatalf("decided %d proposer %v tally %+v", p.DecidedTimestampSeconds, p.Proposer, p.LatestTally)
			}
		})
	}
}

func TestRemovingAProviderTakesItOffTheList(t *testing.T) {
	g, _, _ := setup(t, 0)
	if _, err := g.MakeProposal(controller, 42, removeProvider(providerA)); err != nil {
		t.Fatal(err)
	}
	if got := g.ListNodeProviders().NodeProviders; len(got) != 0 {
		t.Fatalf("providers = %v", got)
	}
}

func TestWithAVotingPeriodAProposalStaysOpenUntilItsDeadline(t *testing.T) {
	g, r, clk := setup(t, time.Hour)
	// the stranger's neuron holds most voting power: the proposer alone is 100/1100 > 3%
	id, err := g.MakeProposal(controller, 42, nnsFunction(t, nns.FunctionChangeSubnetMembership,
		nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsAdd: []principal.Principal{spare}}))
	if err != nil {
		t.Fatal(err)
	}
	g.Tick()
	if p := g.ProposalInfo(id); nns.ProposalStatus(p.Status) != nns.StatusOpen || *p.DeadlineTimestampSeconds != uint64(clk.t.Add(time.Hour).Unix()) {
		t.Fatalf("before the deadline: %s deadline %d", nns.ProposalStatus(p.Status), *p.DeadlineTimestampSeconds)
	}
	if rec, _, _ := r.Subnet(subnet); len(rec.Membership) != 1 {
		t.Fatal("executed before adoption")
	}
	clk.t = clk.t.Add(time.Hour)
	g.Tick()
	if p := g.ProposalInfo(id); nns.ProposalStatus(p.Status) != nns.StatusExecuted {
		t.Fatalf("after the deadline: %s", nns.ProposalStatus(p.Status))
	}
	if rec, _, _ := r.Subnet(subnet); len(rec.Membership) != 2 {
		t.Fatal("adopted proposal did not run")
	}
}

func TestAProposalWithTooLittleSupportIsRejectedAtItsDeadline(t *testing.T) {
	g, _, clk := setup(t, time.Minute)
	g.AddNeuron(Neuron{ID: 8, Controller: stranger, StakeE8s: 1_000_000})
	id, err := g.MakeProposal(controller, 42, removeProvider(providerA))
	if err != nil {
		t.Fatal(err)
	}
	clk.t = clk.t.Add(2 * time.Minute)
	g.Tick()
	p := g.ProposalInfo(id)
	if nns.ProposalStatus(p.Status) != nns.StatusRejected || p.DecidedTimestampSeconds == 0 {
		t.Fatalf("status %s", nns.ProposalStatus(p.Status))
	}
	if len(g.ListNodeProviders().NodeProviders) != 1 {
		t.Fatal("a rejected proposal executed")
	}
}

func TestFullNeuronIsReadableOnlyByItsControllerAndHotkeys(t *testing.T) {
	g, _, _ := setup(t, 0)
	for _, c := range []principal.Principal{controller, hotkey} {
		r := g.FullNeuron(c, 42)
		if r.Ok == nil || *r.Ok.Controller != controller || len(r.Ok.HotKeys) != 1 {
			t.Fatalf("%s: %+v", c, r)
		}
	}
	if r := g.FullNeuron(stranger, 42); r.Err == nil || r.Err.ErrorType != nns.ErrorTypeNotAuthorized {
		t.Fatalf("stranger: %+v", r)
	}
	if r := g.FullNeuron(controller, 5); r.Err == nil || r.Err.ErrorType != nns.ErrorTypeNotFound {
		t.Fatalf("unknown: %+v", r)
	}
}

func TestListProposalsIsNewestFirstAndFiltersByStatus(t *testing.T) {
	g, _, _ := setup(t, 0)
	ok1, _ := g.MakeProposal(controller, 42, removeProvider(providerA))
	bad, _ := g.MakeProposal(controller, 42, removeProvider(providerA)) // now unknown: fails
	ok2, _ := g.MakeProposal(controller, 42, nns.MakeProposalRequest{Title: title("A motion"), Action: &nns.ProposalActionRequest{Motion: &nns.Motion{MotionText: "hi"}}})
	all := g.ListProposals(nns.ListProposalInfo{Limit: 10}).ProposalInfo
	if len(all) != 3 || all[0].ID.ID != ok2 || all[2].ID.ID != ok1 {
		t.Fatalf("order: %v", ids(all))
	}
	failed := g.ListProposals(nns.ListProposalInfo{Limit: 10, IncludeStatus: []int32{int32(nns.StatusFailed)}}).ProposalInfo
	if len(failed) != 1 || failed[0].ID.ID != bad {
		t.Fatalf("failed: %v", ids(failed))
	}
	older := g.ListProposals(nns.ListProposalInfo{Limit: 1, BeforeProposal: &nns.ProposalID{ID: ok2}}).ProposalInfo
	if len(older) != 1 || older[0].ID.ID != bad {
		t.Fatalf("before: %v", ids(older))
	}
}

func ids(ps []nns.ProposalInfo) []uint64 {
	var out []uint64
	for _, p := range ps {
		out = append(out, p.ID.ID)
	}
	return out
}

func TestIdsContinueAfterPurgedProposals(t *testing.T) {
	g, _, _ := setup(t, 0)
	g.SkipIDs(500)
	g.SkipIDs(10) // never goes back
	id, err := g.MakeProposal(controller, 42, removeProvider(providerA))
	if err != nil || id != 500 {
		t.Fatalf("id %d, err %v", id, err)
	}
	if g.ProposalInfo(499) != nil {
		t.Fatal("a purged id answers")
	}
}

func TestAProposalWhoseTitleSummaryOrURLGovernanceRefusesIsNotFiled(t *testing.T) {
	g, _, _ := setup(t, 0)
	for name, change := range map[string]func(*nns.MakeProposalRequest){
		"no title":                func(r *nns.MakeProposalRequest) { r.Title = nil },
		"a four-byte title":       func(r *nns.MakeProposalRequest) { r.Title = title("four") },
		"a 30001-byte summary":    func(r *nns.MakeProposalRequest) { r.Summary = strings.Repeat("x", 30001) },
		"a url off the forum":     func(r *nns.MakeProposalRequest) { r.URL = "https://github.com/dfinity/ic" },
		"a url that is not https": func(r *nns.MakeProposalRequest) { r.URL = "http://forum.dfinity.org/t/1" },
	} {
		req := removeProvider(pid("whoever"))
		change(&req)
		if id, err := g.MakeProposal(controller, 42, req); err == nil || err.ErrorType != nns.ErrorTypeInvalidProposal {
			t.Errorf("%s: filed as %d (%v), want InvalidProposal", name, id, err)
		}
	}
	req := removeProvider(pid("whoever"))
	req.URL = "https://forum.dfinity.org/t/remove-a-provider/1"
	if _, err := g.MakeProposal(controller, 42, req); err != nil {
		t.Errorf("a forum url: %v", err)
	}
}
