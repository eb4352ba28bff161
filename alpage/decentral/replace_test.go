package decentral

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// seven is a subnet of 7 nodes (more than 2 to break it), each with its own
// provider, data center and owner, in countries c1 c1 c2 c2 c3 c4 c5: its
// coefficients are 3, 3, 3 and 2.
func seven() []Node {
	return []Node{
		nd("m1", "p1", "d1", "o1", "c1"), nd("m2", "p2", "d2", "o2", "c1"),
		nd("m3", "p3", "d3", "o3", "c2"), nd("m4", "p4", "d4", "o4", "c2"),
		nd("m5", "p5", "d5", "o5", "c3"), nd("m6", "p6", "d6", "o6", "c4"),
		nd("m7", "p7", "d7", "o7", "c5"),
	}
}

// Replacing m7, a candidate that shares a provider loses a provider actor, one
// in c1 lets c1 hold 3 of 7; two fresh candidates tie on every rule, and the
// lower id wins.
func TestTheReplacementKeepsEveryCoefficientAndTiesGoToTheLowerID(t *testing.T) {
	req := Request{
		Members: seven(),
		Replace: []string{"m7"},
		Candidates: []Node{
			nd("x4", "p10", "d10", "o10", "c5"),
			nd("x1", "p1", "d8", "o8", "c6"),
			nd("x2", "p8", "d8", "o8", "c1"),
			nd("x3", "p9", "d9", "o9", "c6"),
		},
		Minimum: Coefficients{3, 3, 3, 2},
	}
	res, err := Replace(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Infeasible != nil {
		t.Fatalf("infeasible: %s", res.Infeasible)
	}
	if len(res.Choices) != 1 {
		t.Fatalf("choices %+v", res.Choices)
	}
	ch := res.Choices[0]
	if ch.Replaced != "m7" || ch.Chosen.ID != "x3" || ch.RunnerUp != "x4" || ch.Candidates != 4 {
		t.Fatalf("choice %+v: want x3 for m7, ahead of x4, of 4", ch)
	}
	if ch.Before != (Coefficients{3, 3, 3, 2}) || ch.After != (Coefficients{3, 3, 3, 2}) || res.After != ch.After {
		t.Errorf("coefficients %v → %v, result %v", ch.Before, ch.After, res.After)
	}
	want := "x3 replaces m7: node_provider 3→3 (minimum 3), data_center 3→3 (minimum 3), data_center_owner 3→3 (minimum 3), country 2→2 (minimum 2); best of 4 candidates, ahead of x4 by the lower node id, all else equal"
	if got := ch.Reason(res.Minimum); got != want {
		t.Errorf("reason\n %s\nwant\n %s", got, want)
	}
}

// Each rule decides only when the ones before it tie, and the reason names the
// rule that put the choice ahead of the runner-up.
func TestTheReasonNamesTheRuleThatDecided(t *testing.T) {
	allCH := func(n int) []Node {
		var out []Node
		for _, m := range spread(n) {
			m.Country = "CH"
			out = append(out, m)
		}
		return out
	}
	crowded := seven() // d1 holds m1, m2 and m3: the data-center coefficient is 1
	crowded[1].DataCenter, crowded[2].DataCenter = "d1", "d1"
	for _, tc := range []struct {
		why        string
		members    []Node
		cands      []Node
		minimum    Coefficients
		chosen     string
		margin     string
		infeasible bool
	}{{
		why:     "a provider already in the subnet lowers the product",
		members: seven(), cands: []Node{nd("a", "p1", "d8", "o8", "c6"), nd("b", "p8", "d9", "o9", "c6")},
		chosen: "b", margin: "a higher product of the coefficients (54 vs 36)",
	}, {
		why:     "the shortfall below a minimum decides before the product",
		members: seven(), cands: []Node{nd("a", "p1", "d8", "o8", "c6"), nd("b", "p8", "d9", "o9", "c1")},
		minimum: Coefficients{Country: 2},
		chosen:  "a", margin: "a smaller total shortfall below the minimums (0 vs 1)",
	}, {
		why:     "every node in one country: a second country holds fewer nodes in the dominant one",
		members: allCH(7), cands: []Node{nd("a", "p8", "d8", "o8", "CH"), nd("b", "p9", "d9", "o9", "DE")},
		minimum: Coefficients{Country: 1},
		chosen:  "b", margin: "fewer nodes held by the dominant country actors (6 vs 7)",
	}, {
		why:     "a new data center rather than a used one, when the coefficient cannot tell",
		members: crowded, cands: []Node{nd("a", "p8", "d1", "o8", "c6"), nd("b", "p9", "d9", "o9", "c6")},
		chosen: "b", margin: "more distinct data_center actors (5 vs 4)",
	}, {
		why:     "no candidate keeps a country minimum of 2 when all are in c1",
		members: seven(), cands: []Node{nd("a", "p8", "d8", "o8", "c1"), nd("b", "p9", "d9", "o9", "c1")},
		minimum: Coefficients{3, 3, 3, 2}, infeasible: true,
	}} {
		t.Run(tc.why, func(t *testing.T) {
			replace := tc.members[len(tc.members)-1].ID
			res, err := Replace(Request{Members: tc.members, Replace: []string{replace}, Candidates: tc.cands, Minimum: tc.minimum})
			if err != nil {
				t.Fatal(err)
			}
			if tc.infeasible {
				if res.Infeasible == nil || res.Choices != nil {
					t.Fatalf("want infeasible, got %+v", res)
				}
				return
			}
			if res.Infeasible != nil {
				t.Fatalf("infeasible: %s", res.Infeasible)
			}
			if ch := res.Choices[0]; ch.Chosen.ID != tc.chosen || ch.Margin != tc.margin {
				t.Errorf("chose %s by %q, want %s by %q", ch.Chosen.ID, ch.Margin, tc.chosen, tc.margin)
			}
		})
	}
}

// When every candidate is in c1, c1 would hold 3 of 7 nodes: the note names
// country, the minimum, what the best choice reaches, and that no choice from
// these candidates can do better.
func TestWhenNoChoiceKeepsTheMinimumTheResultNamesTheAttribute(t *testing.T) {
	req := Request{
		Members:    seven(),
		Replace:    []string{"m7"},
		Candidates: []Node{nd("a", "p8", "d8", "o8", "c1"), nd("b", "p9", "d9", "o9", "c1")},
		Minimum:    Coefficients{3, 3, 3, 2},
	}
	res, err := Replace(req)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Infeasible
	if f == nil {
		t.Fatalf("want infeasible, got %+v", res)
	}
	if !reflect.DeepEqual(f.Unmet, []Unmet{{Attribute: Country, Minimum: 2, Reached: 1, Bound: 1}}) || !f.Unmet[0].Impossible() {
		t.Fatalf("unmet %+v", f.Unmet)
	}
	if res.After != res.Before || res.Choices != nil {
		t.Errorf("an infeasible result changes nothing: %v → %v, %v", res.Before, res.After, res.Choices)
	}
	want := "country cannot be kept at its minimum 2: the best replacement reaches 1, and no choice from these candidates reaches more than 1"
	if f.String() != want {
		t.Errorf("note %q\nwant %q", f.String(), want)
	}

	res, err = Replace(Request{Members: seven(), Replace: []string{"m6", "m7"}, Candidates: req.Candidates[:1]})
	if err != nil || res.Infeasible == nil || res.Infeasible.String() != "2 replacements are needed but only 1 healthy unassigned candidates are offered" {
		t.Errorf("too few candidates: %v %+v", err, res.Infeasible)
	}
}

// The bound fills the actors the candidates offer from the smallest up: with
// c1 and c2 at 2 nodes and c3, c4 at one, a c3 candidate makes it 2 where
// any c1 one makes it 1.
func TestTheBoundFillsTheSmallestActorFirst(t *testing.T) {
	cands := []Node{nd("a", "", "", "", "c1"), nd("b", "", "", "", "c1"), nd("c", "", "", "", "c3"), nd("d", "", "", "", "c1")}
	if got := bound(seven(), []string{"m7"}, cands, Country); got != 2 {
		t.Errorf("bound %d, want 2", got)
	}
	if got := bound(seven(), []string{"m7"}, cands[:2], Country); got != 1 {
		t.Errorf("bound with only c1 candidates %d, want 1", got)
	}
	if got := bound(seven(), []string{"m6", "m7"}, cands, Country); got != 1 {
		t.Errorf("bound for two places %d, want 1 (c3, then c1 for want of another c3: c1 holds 3 of 7)", got)
	}
}

// Two down members of a 13-node subnet: two different candidates take their
// places, each from a provider, data center, owner and country the subnet
// lacks, and a shuffled pool gives the same answer.
func TestReplacingTwoMembersIsTheSameWhateverOrderThePoolIsIn(t *testing.T) {
	members := spread(13)
	var pool []Node
	for i := range 40 {
		// Most candidates repeat an actor the subnet has; x31 and x37 do not.
		n := nd("x"+itoa(i), "p"+itoa(i%13), "d"+itoa(i%13), "o"+itoa(i%13), "c"+itoa(i%7))
		if i == 31 || i == 37 {
			n = nd(n.ID, "p-new"+itoa(i), "d-new"+itoa(i), "o-new"+itoa(i), "c-new"+itoa(i))
		}
		pool = append(pool, n)
	}
	req := Request{Members: members, Replace: []string{"m05", "m01"}, Candidates: pool, Minimum: DefaultMinimums(13)}
	first, err := Replace(req)
	if err != nil || first.Infeasible != nil {
		t.Fatalf("%v %v", err, first.Infeasible)
	}
	var got []string
	for _, c := range first.Choices {
		got = append(got, c.Replaced+"→"+c.Chosen.ID)
	}
	if !slices.Equal(got, []string{"m01→x31", "m05→x37"}) {
		t.Fatalf("choices %v", got)
	}
	if first.After != (Coefficients{5, 5, 5, 3}) {
		t.Errorf("after %v", first.After)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
		again, err := Replace(req)
		if err != nil || !reflect.DeepEqual(again, first) {
			t.Fatalf("a shuffled pool chose differently: %v\n%+v\n%+v", err, again, first)
		}
	}
}

func TestReplaceRefusesARequestThatDoesNotFitTheSubnet(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Members: seven(), Replace: []string{"zz"}}, "node zz to replace is not a member"},
		{Request{Members: seven(), Replace: []string{"m1", "m1"}}, "node m1 to replace is listed twice"},
		{Request{Members: seven(), Replace: []string{"m1"}, Candidates: seven()[1:2]}, "candidate m2 is already a member"},
		{Request{Members: seven(), Candidates: []Node{nd("a", "", "", "", ""), nd("a", "", "", "", "")}}, "candidate node a is listed twice"},
		{Request{Members: []Node{{}}}, "member 1 has no node id"},
	} {
		if _, err := Replace(tc.req); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
