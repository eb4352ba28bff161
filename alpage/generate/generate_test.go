package generate

import (
	"slices"
	"strings"
	"testing"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/reconcile"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/principal"
)

func id(s string) string { return principal.SelfAuthenticating([]byte(s)).String() }

var (
	app1, app2      = id("app1"), id("app2")
	vOld, vNew      = "b14a223a8fa8498a3f75f86d0622d37e24a0a780", "f7a20dd476ef99474b4f932fb0a24327bdeb4a67"
	vUnelected      = "790bb016bef1fc5ebc226e040ef574b29ae87dea"
	n1, n2, n3, n4  = id("n1"), id("n2"), id("n3"), id("n4")
	n5              = id("n5")
	opA, opOld      = id("opA"), id("opOld")
	provA, provGone = id("provA"), id("provGone")
	opGone          = id("opGone")
	admin1, admin2  = id("admin1"), id("admin2")
)

// fleet is a declaration that matches live() exactly; each test edits one
// of them into drift.
func fleet() *config.Resources {
	return &config.Resources{
		Subnets: []*config.Subnet{{Name: "app1", ID: app1}, {Name: "app2", ID: app2}},
		NodeProviders: []*config.NodeProvider{{Name: "prov_a", ID: provA, Label: "Provider A"},
			{Name: "prov_gone", ID: provGone, Label: "Gone Provider"}},
		NodeOperators: []*config.NodeOperator{{Name: "op_a", ID: opA, Provider: provA}, {Name: "op_old", ID: opOld, Provider: provA},
			{Name: "op_gone", ID: opGone, Provider: provGone}},
		GuestOSVersions: []*config.GuestOSVersion{{Name: "old", ID: vOld}, {Name: "new", ID: vNew, Label: "release-2026-11-13_03-21-base"}},
		Nodes: []*config.Node{
			{Name: "node_1", ID: n1, Subnet: app1, Operator: opA},
			{Name: "node_2", ID: n2, Subnet: app1, Operator: opA},
			{Name: "node_3", ID: n3, Subnet: app2, Operator: opA},
			{Name: "node_4", ID: n4, Operator: opA},
			{Name: "node_5", ID: n5, Operator: opOld},
		},
	}
}

func live() *reconcile.Live {
	return &reconcile.Live{
		Subnets: map[string]reconcile.SubnetFacts{
			app1: {Found: true, Members: []string{n1, n2}, Type: "application", ReplicaVersion: vOld},
			app2: {Found: true, Members: []string{n3}, Type: "application", ReplicaVersion: vOld},
		},
		Providers: map[string]reconcile.ProviderFacts{
			provA:    {Known: true, Operators: map[string]string{opA: "", opOld: ""}},
			provGone: {Known: true, Operators: map[string]string{opGone: ""}},
		},
		Operators:     map[string]reconcile.OperatorFacts{opA: {Found: true}, opOld: {Found: true}, opGone: {Found: true}},
		OperatorNodes: map[string]reconcile.OperatorNodes{opA: {Nodes: []string{n1, n2, n3, n4}}, opOld: {Nodes: []string{n5}}, opGone: {}},
		Nodes: map[string]reconcile.NodeFacts{n1: {Found: true, Operator: opA}, n2: {Found: true, Operator: opA}, n3: {Found: true, Operator: opA},
			n4: {Found: true, Operator: opA}, n5: {Found: true, Operator: opOld}},
		Elected: map[string]bool{vOld: true, vNew: true, vUnelected: false},
	}
}

func node(res *config.Resources, name string) *config.Node {
	for _, n := range res.Nodes {
		if n.Name == name {
			return n
		}
	}
	panic(name)
}

func nameList(ps []*Proposal) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestAFleetInSyncGeneratesNothing(t *testing.T) {
	r := Generate(Input{Res: fleet(), Live: live()})
	if len(r.Proposals) != 0 || len(r.Notes) != 0 {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
}

func TestMembershipMovesNodesOutBeforeTheyJoinAnotherSubnet(t *testing.T) {
	res := fleet()
	node(res, "node_4").Subnet = app1 // free: joins at once
	node(res, "node_2").Subnet = app2 // moves: leaves app1 first
	node(res, "node_3").Subnet = ""   // leaves app2
	r := Generate(Input{Res: res, Live: live()})
	want := []string{"replace-nodes-in-app1", "remove-node-3-from-app2", "add-node-2-to-app2"}
	if !slices.Equal(nameList(r.Proposals), want) {
		t.Fatalf("generated %v, want %v; notes %v", nameList(r.Proposals), want, r.Notes)
	}
	replace, out, in := r.Proposals[0], r.Proposals[1], r.Proposals[2]
	rb, ob := replace.Body.(*kinds.Membership), out.Body.(*kinds.Membership)
	if !slices.Equal(refIDs(rb.Add), []string{n4}) || !slices.Equal(refIDs(rb.Remove), []string{n2}) || replace.Kind != config.KindMembership {
		t.Errorf("replace: add %v remove %v", refIDs(rb.Add), refIDs(rb.Remove))
	}
	if !slices.Equal(refIDs(ob.Remove), []string{n3}) || len(ob.Add) != 0 || len(out.After) != 0 {
		t.Errorf("remove from app2: %+v", out)
	}
	if !slices.Equal(in.After, []string{"replace-nodes-in-app1"}) {
		t.Errorf("node_2 joins app2 after %v, want after replace-nodes-in-app1", in.After)
	}
	for _, s := range []string{"Replace nodes in subnet " + short(app1) + ": add nodes [" + short(n4) + "]; remove nodes [" + short(n2) + "]"} {
		if replace.Title != s {
			t.Errorf("title %q, want %q", replace.Title, s)
		}
	}
	for _, s := range []string{"# Replace nodes in subnet " + app1 + ".", "- Add nodes [" + n4 + "]", "- Remove nodes [" + n2 + "]",
		"Motivation:", n2 + " leaves the subnet: it is declared in subnet app2", n4 + " joins the subnet: it is declared in it and is unassigned"} {
		if !strings.Contains(replace.Summary, s) {
			t.Errorf("summary lacks %q:\n%s", s, replace.Summary)
		}
	}
}

func TestAnUnmanagedMemberAndAnUnregisteredNodeAreNotes(t *testing.T) {
	res, l := fleet(), live()
	l.Subnets[app1] = reconcile.SubnetFacts{Found: true, Members: []string{n1, n2, id("stranger")}, Type: "application", ReplicaVersion: vOld}
	node(res, "node_4").Subnet = app1
	l.Nodes[n4] = reconcile.NodeFacts{}
	r := Generate(Input{Res: res, Live: l})
	if len(r.Proposals) != 0 || len(r.Notes) != 2 {
		t.Fatalf("generated %v, notes %q", nameList(r.Proposals), r.Notes)
	}
	if !strings.Contains(r.Notes[0], "not registered") || !strings.Contains(r.Notes[1], "has no node block") {
		t.Errorf("notes %q", r.Notes)
	}
}

func TestDeployGuestOSRollsASubnetToTheElectedVersionItsNodesDeclare(t *testing.T) {
	res := fleet()
	node(res, "node_1").Version, node(res, "node_2").Version = vNew, vNew
	r := Generate(Input{Res: res, Live: live()})
	if !slices.Equal(nameList(r.Proposals), []string{"deploy-new-to-app1"}) {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
	p := r.Proposals[0]
	if d := p.Body.(*kinds.DeployGuestOS); p.Kind != config.KindDeployGuestOS || d.ReplicaVersionID != vNew || d.SubnetID != app1 ||
		p.Title != "Update subnet "+short(app1)+" to GuestOS version f7a20dd4" ||
		!strings.Contains(p.Summary, "https://dashboard.internetcomputer.org/release/"+vNew) || !strings.Contains(p.Summary, "release-2026-11-13_03-21-base") {
		t.Fatalf("%+v", p)
	}
	// Unelected, or split between two versions: a note, no proposal.
	node(res, "node_1").Version, node(res, "node_2").Version = vUnelected, vUnelected
	if r := Generate(Input{Res: res, Live: live()}); len(r.Proposals) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "not elected") {
		t.Errorf("unelected: %v %q", nameList(r.Proposals), r.Notes)
	}
	node(res, "node_1").Version = vNew
	if r := Generate(Input{Res: res, Live: live()}); len(r.Proposals) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "a subnet runs one") {
		t.Errorf("split: %v %q", nameList(r.Proposals), r.Notes)
	}
}

func TestRemoveNodesTakesADecommissionedMemberOutOfItsSubnetFirst(t *testing.T) {
	res := fleet()
	node(res, "node_2").Decommissioned = true
	node(res, "node_4").Decommissioned = true
	r := Generate(Input{Res: res, Live: live()})
	if !slices.Equal(nameList(r.Proposals), []string{"remove-node-2-from-app1", "remove-2-nodes"}) {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
	rm := r.Proposals[1]
	if rm.Kind != config.KindRemoveNodes || !slices.Equal(rm.After, []string{"remove-node-2-from-app1"}) || len(rm.Body.(*kinds.RemoveNodes).Nodes) != 2 ||
		!strings.HasPrefix(rm.Title, "Remove decommissioned nodes [") {
		t.Fatalf("%+v", rm)
	}
	// A node already gone is not removed again.
	l := live()
	l.Nodes[n4] = reconcile.NodeFacts{}
	node(res, "node_2").Decommissioned = false
	if r := Generate(Input{Res: res, Live: l}); len(r.Proposals) != 0 {
		t.Errorf("a deregistered node: %v", nameList(r.Proposals))
	}
}

func TestRemoveNodeOperatorsWaitsForTheOperatorsNodes(t *testing.T) {
	res := fleet()
	res.NodeOperators[1].Decommissioned = true // op_old owns node_5
	r := Generate(Input{Res: res, Live: live()})
	if len(r.Proposals) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "still owns nodes ["+n5+"]") {
		t.Fatalf("with its node left: %v %q", nameList(r.Proposals), r.Notes)
	}
	node(res, "node_5").Decommissioned = true
	r = Generate(Input{Res: res, Live: live()})
	if !slices.Equal(nameList(r.Proposals), []string{"remove-node-5", "remove-operator-op-old"}) {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
	op := r.Proposals[1]
	var b strings.Builder
	if err := WriteHCL(&b, []*Proposal{op}); err != nil {
		t.Fatal(err)
	}
	if op.Kind != config.KindRemoveNodeOperators || !slices.Equal(op.After, []string{"remove-node-5"}) || !strings.Contains(b.String(), "operators = [node_operator.op_old.id]") {
		t.Fatalf("%+v\n%s", op, b.String())
	}
}

func TestRemoveNodeProviderComesAfterItsOperators(t *testing.T) {
	res := fleet()
	res.NodeProviders[1].Decommissioned = true
	res.NodeOperators[2].Decommissioned, res.NodeOperators[2].DecommissionedByProvider = true, true
	r := Generate(Input{Res: res, Live: live()})
	if !slices.Equal(nameList(r.Proposals), []string{"remove-operator-op-gone", "remove-provider-prov-gone"}) {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
	p := r.Proposals[1]
	if p.Kind != config.KindRemoveNodeProvider || p.Title != "Remove node provider Gone Provider" || !slices.Equal(p.After, []string{"remove-operator-op-gone"}) {
		t.Fatalf("%+v", p)
	}
	// An operator the provider still has, undeclared: a note.
	l := live()
	l.Providers[provGone] = reconcile.ProviderFacts{Known: true, Operators: map[string]string{opGone: "", id("other"): ""}}
	if r := Generate(Input{Res: res, Live: l}); !slices.Equal(nameList(r.Proposals), []string{"remove-operator-op-gone"}) || len(r.Notes) != 1 {
		t.Errorf("generated %v, notes %q", nameList(r.Proposals), r.Notes)
	}
}

func TestUpdateSubnetSetsTheDeclaredAdmins(t *testing.T) {
	res, l := fleet(), live()
	res.Subnets[1].Type, res.Subnets[1].CostSchedule, res.Subnets[1].Admins = "application", "free", []string{admin2, admin1}
	f := l.Subnets[app2]
	f.Admins, f.CostSchedule = []string{admin1}, "free"
	l.Subnets[app2] = f
	r := Generate(Input{Res: res, Live: l})
	if !slices.Equal(nameList(r.Proposals), []string{"set-admins-of-app2"}) {
		t.Fatalf("generated %v, notes %v", nameList(r.Proposals), r.Notes)
	}
	p := r.Proposals[0]
	want := sortedCopy([]string{admin1, admin2})
	if p.Kind != config.KindUpdateSubnet || !slices.Equal(*p.Body.(*kinds.UpdateSubnet).SubnetAdmins, want) || !strings.Contains(p.Summary, admin2+" is declared an admin") {
		t.Fatalf("%+v", p)
	}
}

func TestDriftNoProposalClosesIsANote(t *testing.T) {
	res, l := fleet(), live()
	res.Subnets[0].Type = "system"
	yes := true
	res.Subnets[1].SevEnabled = &yes
	res.DataCenters = []*config.DataCenter{{Name: "zh1", ID: "zh1", Region: "Europe,CH,Zurich"}}
	l.DataCenters = map[string]reconcile.DataCenterFacts{"zh1": {Found: true, Region: "Europe,CH,Geneva"}}
	node(res, "node_1").Chip = make([]byte, 64)
	r := Generate(Input{Res: res, Live: l})
	if len(r.Proposals) != 0 || len(r.Notes) != 4 {
		t.Fatalf("generated %v, notes %q", nameList(r.Proposals), r.Notes)
	}
	for i, s := range []string{"type is fixed", "sev_enabled", "region", "chip id"} {
		if !strings.Contains(r.Notes[i], s) {
			t.Errorf("note %d %q lacks %q", i, r.Notes[i], s)
		}
	}
}

func TestWhatIsPendingIsNotGeneratedAgain(t *testing.T) {
	res := fleet()
	node(res, "node_4").Subnet = app1
	node(res, "node_5").Decommissioned = true
	first := Generate(Input{Res: res, Live: live()})
	if len(first.Proposals) != 2 {
		t.Fatalf("generated %v", nameList(first.Proposals))
	}
	var pending []Change
	taken := map[string]bool{}
	for _, p := range first.Proposals {
		pending = append(pending, p.Closes...)
		taken[p.Name] = true
	}
	again := Generate(Input{Res: res, Live: live(), Pending: pending, Taken: taken})
	if len(again.Proposals) != 0 {
		t.Fatalf("generated again: %v", nameList(again.Proposals))
	}
	// Half pending: only the rest, under a name not taken.
	node(res, "node_3").Subnet = app1
	l := live()
	l.Subnets[app2] = reconcile.SubnetFacts{Found: true, Type: "application"}
	more := Generate(Input{Res: res, Live: l, Pending: pending, Taken: map[string]bool{"add-node-3-to-app1": true}})
	if !slices.Equal(nameList(more.Proposals), []string{"add-node-3-to-app1-2"}) || !slices.Equal(refIDs(more.Proposals[0].Body.(*kinds.Membership).Add), []string{n3}) {
		t.Fatalf("generated %v", nameList(more.Proposals))
	}
}

func TestPendingDeclaredSkipsTerminalRecords(t *testing.T) {
	ps := []*config.Proposal{
		{Name: "a", Kind: config.KindRemoveNodes, Body: &kinds.RemoveNodes{Nodes: []kinds.NodeRef{{ID: n1}}}},
		{Name: "b", Kind: config.KindRemoveNodeProvider, Body: &kinds.RemoveNodeProvider{NodeProviderID: provGone}},
		{Name: "c", Kind: config.KindDeployGuestOS, Body: &kinds.DeployGuestOS{SubnetID: app1, ReplicaVersionID: vNew}},
	}
	st := state.New()
	st.Proposals["a"] = &state.Proposal{Status: state.StatusRejected}
	st.Proposals["b"] = &state.Proposal{Status: state.StatusOpen}
	got := PendingDeclared(ps, st)
	want := []Change{{Op: OpRemoveProvider, Subject: provGone, Target: ""}, {Op: OpDeploy, Subject: app1, Target: vNew}}
	if !slices.Equal(got, want) {
		t.Fatalf("pending %v, want %v", got, want)
	}
}

func refIDs(rs []kinds.NodeRef) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestTheBlocksEscapeWhatHCLWouldReadAsATemplate(t *testing.T) {
	p := &Proposal{Name: "x", Kind: config.KindRemoveNodeProvider, Title: `a "${b}" %{c}`, Summary: "line ${one}\nEOT\n", Body: &kinds.RemoveNodeProvider{NodeProviderID: provGone}}
	var b strings.Builder
	if err := WriteHCL(&b, []*Proposal{p}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`title   = "a \"$${b}\" %%{c}"`, `summary = "line $${one}\nEOT\n"`, `node_provider_id = "` + provGone + `"`} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("lacks %s:\n%s", s, b.String())
		}
	}
}

func TestAProposalPreflightRefusesIsDroppedWithWhatWaitsOnIt(t *testing.T) {
	ps := []*Proposal{{Name: "a"}, {Name: "b", After: []string{"a"}}, {Name: "c"}, {Name: "d", After: []string{"b", "c"}}, {Name: "e", After: []string{"c"}}}
	kept, notes := Drop(ps, map[string]string{"a": "node x is not registered"})
	if !slices.Equal(nameList(kept), []string{"c", "e"}) || len(notes) != 3 ||
		notes[0] != "a is not generated: preflight refuses it (node x is not registered)" || notes[1] != "b is not generated: it waits on a, which is not" {
		t.Fatalf("kept %v, notes %q", nameList(kept), notes)
	}
}

func TestANodeThatHasNotUpgradedToItsSubnetsVersionIsANote(t *testing.T) {
	res, l := fleet(), live()
	node(res, "node_1").Version, node(res, "node_2").Version = vOld, vOld
	l.Versions = map[string]reconcile.VersionFacts{n1: {Version: vOld}, n2: {Version: vNew}}
	r := Generate(Input{Res: res, Live: l})
	if len(r.Proposals) != 0 || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "node node_2 runs f7a20dd4, but subnet app1's record already names old") {
		t.Fatalf("generated %v, notes %q", nameList(r.Proposals), r.Notes)
	}
}
