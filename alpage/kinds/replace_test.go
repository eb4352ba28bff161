package kinds

import (
	"strings"
	"testing"

	"alpnib.dev/alpage/decentral"
)

// replacementDrift is a four-node subnet "app" whose member m4 is down, and
// an unassigned pool: c1 shares m1's provider, data center, owner and
// country; c2 is in none of the members'; c3 is down itself; c4's health
// is unknown.
func replacementDrift(minimum map[string]int) *Drift {
	const subnet = "subnet-app"
	places := map[string]decentral.Node{
		"m1": decentral.NewNode("m1", "p1", "d1", "o1", "Europe,CH,Zurich"),
		"m2": decentral.NewNode("m2", "p2", "d2", "o2", "Europe,DE,Berlin"),
		"m3": decentral.NewNode("m3", "p3", "d3", "o3", "America,US,NewYork"),
		"m4": decentral.NewNode("m4", "p4", "d4", "o4", "Asia,SG,Singapore"),
		"c1": decentral.NewNode("c1", "p1", "d1", "o1", "Europe,CH,Zurich"),
		"c2": decentral.NewNode("c2", "p5", "d5", "o5", "Asia,JP,Tokyo"),
		"c3": decentral.NewNode("c3", "p6", "d6", "o6", "Africa,ZA,Johannesburg"),
		"c4": decentral.NewNode("c4", "p7", "d7", "o7", "America,BR,SaoPaulo"),
	}
	health := map[string]HealthFacts{
		"m1": {Health: HealthHealthy}, "m2": {Health: HealthHealthy}, "m3": {Health: HealthHealthy},
		"m4": {Health: HealthDown, Why: "the ICP dashboard lists it DOWN"},
		"c1": {Health: HealthHealthy}, "c2": {Health: HealthHealthy},
		"c3": {Health: HealthDown}, "c4": {Health: HealthUnknown},
	}
	f := Fleet{Subnets: []FleetSubnet{{ID: subnet, Name: "app", MinNakamoto: minimum}}}
	c := Chain{Subnets: map[string]ChainSubnet{subnet: {Found: true, Members: []string{"m1", "m2", "m3", "m4"}}},
		Nodes: map[string]ChainNode{}, Topology: &Topology{Health: health, Places: Places{Nodes: places}}}
	for _, id := range []string{"m1", "m2", "m3", "m4", "c1", "c2", "c3", "c4"} {
		n := FleetNode{ID: id, Name: "node_" + id}
		if id[0] == 'm' {
			n.Subnet = subnet
		}
		f.Nodes = append(f.Nodes, n)
		c.Nodes[id] = ChainNode{Found: true}
	}
	return NewDrift(f, c, nil)
}

func TestADownMemberIsReplacedByTheHealthyNodeThatKeepsEveryCoefficient(t *testing.T) {
	gs, notes := generateMembership(replacementDrift(nil))
	if len(gs) != 1 {
		t.Fatalf("generated %d proposals, want 1; notes %q", len(gs), notes)
	}
	g := gs[0]
	m := g.Body.(*Membership)
	if len(m.Add) != 1 || m.Add[0].ID != "c2" || len(m.Remove) != 1 || m.Remove[0].ID != "m4" {
		t.Fatalf("proposal adds %v and removes %v, want c2 for m4", m.Add, m.Remove)
	}
	for _, s := range []string{
		"m4 leaves the subnet: it is down (the ICP dashboard lists it DOWN)",
		"c2 joins the subnet in place of m4: node_provider 2→2 (minimum 2), data_center 2→2 (minimum 2), data_center_owner 2→2 (minimum 2), country 2→2 (minimum 1)",
		"best of 2 candidates, ahead of c1",
		"Nakamoto coefficients of the subnet before → after: node_provider 2→2",
	} {
		if !strings.Contains(g.Summary, s) {
			t.Errorf("the summary lacks %q:\n%s", s, g.Summary)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "declare node node_c2 in subnet app and node node_m4 in none") {
		t.Errorf("notes %q, want one asking to declare the swap", notes)
	}
	again, _ := generateMembership(replacementDrift(nil))
	if again[0].Summary != g.Summary {
		t.Errorf("two runs wrote different summaries:\n%s\n---\n%s", g.Summary, again[0].Summary)
	}
}

func TestNoReplacementIsProposedWhenNoneKeepsTheDeclaredMinimum(t *testing.T) {
	gs, notes := generateMembership(replacementDrift(map[string]int{"country": 3}))
	if len(gs) != 0 {
		t.Fatalf("generated %v, want none", gs)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "country cannot be kept at its minimum 3: the best replacement reaches 2") ||
		!strings.Contains(notes[0], "no proposal is generated") {
		t.Errorf("notes %q, want one naming country", notes)
	}
}

func TestAMemberWhoseHealthIsUnknownIsLeftInItsSubnet(t *testing.T) {
	d := replacementDrift(nil)
	d.Chain.Topology.Health["m4"] = HealthFacts{Health: HealthUnknown}
	if gs, notes := generateMembership(d); len(gs)+len(notes) != 0 {
		t.Errorf("generated %v, notes %q; want nothing", gs, notes)
	}
}

func TestAHealthyMemberMarkedForReplacementIsReplacedToo(t *testing.T) {
	d := replacementDrift(nil)
	d.Chain.Topology.Health["m4"] = HealthFacts{Health: HealthHealthy}
	for i := range d.Fleet.Nodes {
		if d.Fleet.Nodes[i].ID == "m3" {
			d.Fleet.Nodes[i].Replace = true
		}
	}
	gs, notes := generateMembership(d)
	if len(gs) != 1 {
		t.Fatalf("generated %d proposals, want 1; notes %q", len(gs), notes)
	}
	m := gs[0].Body.(*Membership)
	if len(m.Remove) != 1 || m.Remove[0].ID != "m3" || len(m.Add) != 1 || m.Add[0].ID != "c2" {
		t.Fatalf("proposal adds %v and removes %v, want c2 for m3", m.Add, m.Remove)
	}
	if !strings.Contains(gs[0].Summary, "m3 leaves the subnet: it is marked for replacement (replace = true)") {
		t.Errorf("the summary does not say why m3 leaves:\n%s", gs[0].Summary)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "node node_m3 in none without replace") {
		t.Errorf("notes %q", notes)
	}
}
