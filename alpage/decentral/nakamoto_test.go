package decentral

import (
	"fmt"
	"slices"
	"testing"
)

// The coefficient is the fewest actors, largest first, holding more than a
// third (rounded down) of the nodes; each row is computed by hand, and the
// first rows are dre's own cases (nakamoto/mod.rs, computes_nakamoto_scores).
func TestTheCoefficientIsTheFewestActorsHoldingMoreThanAThird(t *testing.T) {
	for _, tc := range []struct {
		counts []int
		want   int
		why    string
	}{
		{nil, 0, "no nodes, no actors"},
		{[]int{1}, 1, "one node: a third is 0, one actor holds more"},
		{[]int{3}, 1, "one actor holds everything"},
		{ones(13), 5, "13 alone: more than 4 nodes takes five actors"},
		{[]int{1, 2, 3}, 1, "6 nodes: 3 > 2"},
		{[]int{2, 3, 1}, 1, "order does not matter"},
		{[]int{1, 2, 1, 2, 1}, 2, "7 nodes: 2 is not more than 2, 2+2 is"},
		{ones(4), 2, "4 alone: more than 1 takes two"},
		{ones(7), 3, "7 alone: more than 2 takes three"},
		{[]int{6, 3, 2, 1, 1}, 1, "dre's docs: provider A holds 6 of 13"},
		{[]int{4, 4, 2, 2, 1}, 2, "dre's docs: A and B hold 8 of 13"},
		{[]int{2, 2, 2, 2, 2, 2, 1}, 3, "ties: 13 nodes, 2+2 is 4, 2+2+2 is more"},
		{[]int{4, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 2, "13 nodes: 4 is not more than 4, 4+1 is"},
		{append([]int{3, 3}, ones(22)...), 6, "28 nodes: more than 9 takes 3+3 and four of one"},
	} {
		t.Run(tc.why, func(t *testing.T) {
			before := slices.Clone(tc.counts)
			if got := Coefficient(tc.counts); got != tc.want {
				t.Errorf("Coefficient(%v) = %d, want %d", tc.counts, got, tc.want)
			}
			if !slices.Equal(before, tc.counts) {
				t.Errorf("Coefficient reordered its argument: %v", tc.counts)
			}
		})
	}
}

// Each attribute is counted on its own; a subnet whose every node is in one
// country has a country coefficient of 1 however spread the rest is.
func TestASubnetWhoseEveryNodeSharesACountryHasACountryCoefficientOfOne(t *testing.T) {
	var nodes []Node
	for i := range 13 {
		owner := fmt.Sprintf("o%d", i%3) // 5, 4 and 4 nodes
		nodes = append(nodes, NewNode(fmt.Sprintf("n%02d", i), fmt.Sprintf("p%d", i), fmt.Sprintf("d%d", i), owner, "Europe,CH,Zurich"))
	}
	got := Compute(nodes)
	want := Coefficients{NodeProvider: 5, DataCenter: 5, DataCenterOwner: 1, Country: 1}
	if got != want {
		t.Fatalf("Compute = %v, want %v", got, want)
	}
	if a := Actors(nodes, DataCenterOwner); !slices.Equal(a, []Actor{{"o0", 5}, {"o1", 4}, {"o2", 4}}) {
		t.Errorf("owners %v: want the largest first, equal ones by name", a)
	}
	if got.String() != "node_provider=5 data_center=5 data_center_owner=1 country=1" {
		t.Errorf("String = %q", got.String())
	}
	if b := got.Below(DefaultMinimums(13)); !slices.Equal(b, []Attribute{DataCenterOwner, Country}) {
		t.Errorf("below the default minimums: %v", b)
	}
}

// Nodes whose value is unknown count as one actor, as dre counts its
// "unknown": they are assumed to collude, which never flatters a subnet.
func TestNodesOfUnknownValueCountAsOneActor(t *testing.T) {
	var nodes []Node
	for i := range 13 {
		n := Node{ID: fmt.Sprintf("n%02d", i), Provider: fmt.Sprintf("p%d", i), DataCenter: fmt.Sprintf("d%d", i),
			DataCenterOwner: fmt.Sprintf("o%d", i), Country: fmt.Sprintf("c%d", i)}
		if i < 5 {
			n.DataCenter = ""
			n.Country = CountryOfRegion("Europe") // a malformed region: no country
		}
		nodes = append(nodes, n)
	}
	got := Compute(nodes)
	if got[DataCenter] != 1 || got[Country] != 1 || got[NodeProvider] != 5 {
		t.Fatalf("Compute = %v: five unknown of 13 are one actor holding more than 4", got)
	}
	if a := Actors(nodes, Country)[0]; a != (Actor{Unknown, 5}) {
		t.Errorf("largest country actor %v", a)
	}
}

func TestCountryIsTheSecondOfTheRegionsThreeFields(t *testing.T) {
	for region, want := range map[string]string{
		"Europe,CH,Zurich":              "CH",
		"North America,US,California":   "US",
		"Asia,SG,Singapore,Central":     "SG", // split in at most three: the area keeps its commas
		"Europe,CH":                     "",
		"":                              "",
		"Europe,,Nowhere":               "",
		"South America,AR,Buenos Aires": "AR",
	} {
		if got := CountryOfRegion(region); got != want {
			t.Errorf("CountryOfRegion(%q) = %q, want %q", region, got, want)
		}
	}
}

// The defaults are what the target topology's limits guarantee: one node per
// provider, data center and owner, two per country (three from 28 nodes).
func TestTheDefaultMinimumsAreWhatTheTargetTopologysLimitsGuarantee(t *testing.T) {
	for size, want := range map[int]Coefficients{
		0:  {},
		4:  {2, 2, 2, 1},
		13: {5, 5, 5, 3},
		28: {10, 10, 10, 4},
		34: {12, 12, 12, 4},
		43: {15, 15, 15, 5},
	} {
		if got := DefaultMinimums(size); got != want {
			t.Errorf("DefaultMinimums(%d) = %v, want %v", size, got, want)
		}
	}
	// A subnet exactly at the limits has exactly the minimum.
	counts := append(ones(1), 2, 2, 2, 2, 2, 2) // 13 nodes, no country above 2
	if got := Coefficient(counts); got != MinimumForLimit(13, 2) {
		t.Errorf("a 13-node subnet at the country limit has coefficient %d, the minimum says %d", got, MinimumForLimit(13, 2))
	}
}

func TestAttributesAreNamedAsDreNamesThem(t *testing.T) {
	for _, a := range Attributes {
		if b, ok := AttributeNamed(a.String()); !ok || b != a {
			t.Errorf("AttributeNamed(%q) = %v, %v", a, b, ok)
		}
	}
	if _, ok := AttributeNamed("continent"); ok {
		t.Error("continent is not an attribute dre scores")
	}
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}
