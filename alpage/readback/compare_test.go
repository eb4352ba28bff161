package readback

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// removeNodes is a declared remove_nodes proposal, built as apply builds it.
func removeNodes(t *testing.T) *proposal.Proposal {
	t.Helper()
	node := principal.SelfAuthenticating([]byte("n")).String()
	p, err := proposal.Build(&config.Proposal{Name: "drop-n", Kind: config.KindRemoveNodes, Title: "t",
		Body: &kinds.RemoveNodes{Nodes: []kinds.NodeRef{{ID: node}}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestImportComparesTheActionWithTheDeclaredKindThenThePayload(t *testing.T) {
	p := removeNodes(t)
	run := func(fn nns.NnsFunction, payload []byte) Observation {
		return Observation{ProposalID: 9, Source: FromGovernance, Action: &nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(fn), Payload: payload}}}
	}
	cases := []struct {
		name                     string
		o                        Observation
		mismatch, differs, uncmp string
	}{
		{"governance: the same function and payload", run(nns.FunctionRemoveNodes, p.Payload), "", "", ""},
		{"governance: the same function, another payload", run(nns.FunctionRemoveNodes, []byte("DIDL\x00\x00")), "", "differs from the one the config declares", ""},
		{"governance: another function", run(nns.FunctionChangeSubnetMembership, p.Payload), "runs NNS_FUNCTION_CHANGE_SUBNET_MEMBERSHIP, but \"drop-n\" is a remove_nodes proposal", "", ""},
		{"governance: the native provider action", Observation{ProposalID: 9, Source: FromGovernance, Action: &nns.Action{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{}}}, "runs AddOrRemoveNodeProvider", "", ""},
		{"governance: a motion cannot be compared", Observation{ProposalID: 9, Source: FromGovernance, Action: &nns.Action{Motion: &nns.Motion{MotionText: "m"}}}, "", "", "neither the kind nor the payload was compared: proposal 9 runs a motion"},
		{"dashboard: the same function by name", Observation{ProposalID: 9, Source: FromDashboard, DashboardAction: "ExecuteNnsFunction", DashboardFunction: "REMOVE_NODES"}, "", "", "the payload was not compared"},
		{"dashboard: the same function in another spelling", Observation{ProposalID: 9, Source: FromDashboard, DashboardAction: "ExecuteNnsFunction", DashboardFunction: "RemoveNodes"}, "", "", "the payload was not compared"},
		{"dashboard: another function", Observation{ProposalID: 9, Source: FromDashboard, DashboardAction: "ExecuteNnsFunction", DashboardFunction: "DEPLOY_GUESTOS_TO_ALL_SUBNET_NODES"}, "per the ICP dashboard, but \"drop-n\" is a remove_nodes proposal", "", ""},
		{"dashboard: the native provider action", Observation{ProposalID: 9, Source: FromDashboard, DashboardAction: "AddOrRemoveNodeProvider"}, "runs AddOrRemoveNodeProvider per the ICP dashboard", "", ""},
		{"dashboard: no action given", Observation{ProposalID: 9, Source: FromDashboard}, "", "", "the ICP dashboard gives no action for proposal 9"},
		{"dashboard: an action alp does not know", Observation{ProposalID: 9, Source: FromDashboard, DashboardAction: "Motion"}, "", "", "names proposal 9's action \"Motion\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Compare(p, c.o)
			for _, f := range []struct{ what, got, want string }{{"kind mismatch", got.KindMismatch, c.mismatch}, {"payload", got.PayloadDiffers, c.differs}, {"uncompared", got.Uncompared, c.uncmp}} {
				if (f.want == "") != (f.got == "") || !strings.Contains(f.got, f.want) {
					t.Errorf("%s: %q, want %q", f.what, f.got, f.want)
				}
			}
		})
	}
}

// An update_subnet whose payload inherits live parts: the one on-chain is
// the declaration alone (built offline, or by an earlier release), which
// would reset those parts when adopted. Import says so rather than take it
// as the declared change.
func TestImportWarnsOfAnOnChainPayloadOfTheDeclarationAloneWhenTheBuiltOneInheritsLiveParts(t *testing.T) {
	alone := removeNodes(t)
	live := *alone
	live.Payload = []byte("DIDL\x00\x00")
	live.PayloadSHA256 = sha256Hex(live.Payload)
	live.FormerSHA256 = []string{sha256Hex([]byte("former"))}
	run := func(payload []byte) Observation {
		return Observation{ProposalID: 9, Source: FromGovernance, Action: &nns.Action{ExecuteNnsFunction: &nns.ExecuteNnsFunction{NnsFunction: int32(nns.FunctionRemoveNodes), Payload: payload}}}
	}
	for _, c := range []struct {
		name    string
		payload []byte
		differs string
	}{
		{"the payload as built, live parts included", live.Payload, ""},
		{"the declaration alone", alone.Payload, "is the declaration alone, without the live parts"},
		{"the declaration alone as an earlier release encoded it", []byte("former"), "adopting proposal 9 resets what the registry replaces whole"},
		{"another payload", []byte("other"), "differs from the one the config declares"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Compare(&live, run(c.payload)).PayloadDiffers
			if (c.differs == "") != (got == "") || !strings.Contains(got, c.differs) {
				t.Errorf("payload: %q, want %q", got, c.differs)
			}
		})
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// A native action is compared by its shape: adding the provider a
// remove_node_provider declares is another kind's proposal, though both
// are AddOrRemoveNodeProvider.
func TestImportTellsAnAdditionFromTheRemovalOfAProvider(t *testing.T) {
	id := principal.SelfAuthenticating([]byte("np"))
	p, err := proposal.Build(&config.Proposal{Name: "drop-np", Kind: config.KindRemoveNodeProvider, Title: "t",
		Body: &kinds.RemoveNodeProvider{NodeProviderID: id.String()}})
	if err != nil {
		t.Fatal(err)
	}
	add := &nns.Action{AddOrRemoveNodeProvider: &nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToAdd: &nns.NodeProvider{ID: &id}}}}
	if got := Compare(p, Observation{ProposalID: 9, Source: FromGovernance, Action: add}); !strings.Contains(got.KindMismatch, "makes the action AddOrRemoveNodeProvider.Change.ToAdd, but \"drop-np\" is a remove_node_provider proposal") {
		t.Errorf("an addition imported as a removal: %+v", got)
	}
	if got := Compare(p, Observation{ProposalID: 9, Source: FromGovernance, Action: p.Action}); got.KindMismatch != "" || got.PayloadDiffers != "" || got.Uncompared != "" {
		t.Errorf("the removal itself: %+v", got)
	}
}
