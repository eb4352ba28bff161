package generate

import (
	"slices"
	"testing"
)

// A proposal comes after the proposals making what it waits on, whatever
// order the kinds generated them in; the rest keep theirs, and a cycle
// (which no kind makes) keeps its order instead of looping.
func TestOrderPutsAProposalAfterWhatItWaitsOn(t *testing.T) {
	leave := Change{Op: OpRemove, Subject: n1, Target: app1}
	gone := Change{Op: OpRemoveNode, Subject: n1}
	ps := []*Proposal{
		{Name: "remove-node-1", Closes: []Change{gone}, waits: []Change{leave, {Op: OpRemove, Subject: n2, Target: app1}}},
		{Name: "deploy", Closes: []Change{{Op: OpDeploy, Subject: app2, Target: vNew}}},
		{Name: "leave-app1", Closes: []Change{leave}, waits: []Change{leave}},
		{Name: "operator", Closes: []Change{{Op: OpRemoveOperator, Subject: opA}}, waits: []Change{gone, gone}},
	}
	got := order(ps)
	if names := nameList(got); !slices.Equal(names, []string{"deploy", "leave-app1", "remove-node-1", "operator"}) {
		t.Fatalf("order %v", names)
	}
	for _, p := range got {
		want := map[string][]string{"remove-node-1": {"leave-app1"}, "operator": {"remove-node-1"}}[p.Name]
		if !slices.Equal(p.After, want) {
			t.Errorf("%s waits on %v, want %v (never on itself, each once, none for what no proposal makes)", p.Name, p.After, want)
		}
	}

	a, b := Change{Op: OpAdd, Subject: n1, Target: app1}, Change{Op: OpAdd, Subject: n2, Target: app1}
	cycle := []*Proposal{{Name: "x", Closes: []Change{a}, waits: []Change{b}}, {Name: "y", Closes: []Change{b}, waits: []Change{a}}}
	if names := nameList(order(cycle)); !slices.Equal(names, []string{"x", "y"}) {
		t.Fatalf("a cycle is ordered %v", names)
	}
}
