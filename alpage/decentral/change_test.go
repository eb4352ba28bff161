package decentral

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// spread is a subnet of n nodes, each with its own provider, data center and
// owner, in countries c0, c0, c1, c1, ... (two per country).
func spread(n int) []Node {
	var out []Node
	for i := range n {
		out = append(out, nd(fmt.Sprintf("m%02d", i), fmt.Sprintf("p%d", i), fmt.Sprintf("d%d", i), fmt.Sprintf("o%d", i), fmt.Sprintf("c%d", i/2)))
	}
	return out
}

func nd(id, provider, dc, owner, country string) Node {
	return Node{ID: id, Provider: provider, DataCenter: dc, DataCenterOwner: owner, Country: country}
}

// Swapping a member for a node in a data center the subnet already uses
// lowers the data-center coefficient from 5 to 4 in a 13-node subnet, and
// breaks the default minimum of 5; the other attributes are untouched.
func TestAChangeIntoAUsedDataCenterIsFlaggedWithBothNumbers(t *testing.T) {
	members := spread(13)
	add := []Node{nd("x", "p-new", "d0", "o-new", "c-new")}
	c, err := Compare(members, add, []string{"m12"}, DefaultMinimums(13))
	if err != nil {
		t.Fatal(err)
	}
	if c.Before != (Coefficients{5, 5, 5, 3}) || c.After != (Coefficients{5, 4, 5, 3}) {
		t.Fatalf("before %v after %v", c.Before, c.After)
	}
	if got := c.Decreased(); !slices.Equal(got, []Attribute{DataCenter}) {
		t.Errorf("decreased %v", got)
	}
	if got := c.Breaks(); !slices.Equal(got, []Attribute{DataCenter}) {
		t.Errorf("breaks %v", got)
	}
	if got, want := c.String(), "node_provider 5→5 (minimum 5), data_center 5→4 (minimum 5), data_center_owner 5→5 (minimum 5), country 3→3 (minimum 3)"; got != want {
		t.Errorf("side by side %q\nwant %q", got, want)
	}
	r := c.Rows[DataCenter]
	if r.Before != 5 || r.After != 4 || r.Minimum != 5 || !r.Decreased() || !r.BelowMinimum() {
		t.Errorf("data center row %+v", r)
	}
}

// A subnet already below its minimum is below it after a change that does not
// make it worse, but the change does not break it; an addition that spreads
// the subnet raises a coefficient and flags nothing.
func TestAChangeThatDoesNotLowerACoefficientBreaksNothing(t *testing.T) {
	members := spread(12)
	for i := range members {
		members[i].Country = "CH"
	}
	c, err := Compare(members, []Node{nd("x", "p-new", "d-new", "o-new", "DE")}, nil, DefaultMinimums(13))
	if err != nil {
		t.Fatal(err)
	}
	if c.Before != (Coefficients{5, 5, 5, 1}) || c.After != (Coefficients{5, 5, 5, 1}) {
		t.Fatalf("before %v after %v", c.Before, c.After)
	}
	if len(c.Decreased()) != 0 || len(c.Breaks()) != 0 || !slices.Equal(c.BelowMinimum(), []Attribute{Country}) {
		t.Errorf("decreased %v breaks %v below %v", c.Decreased(), c.Breaks(), c.BelowMinimum())
	}

	c, err = Compare(spread(12), []Node{nd("x", "p-new", "d-new", "o-new", "c-new")}, nil, Coefficients{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Before[NodeProvider] != 5 || c.After[NodeProvider] != 5 || c.Before[Country] != 3 || c.After[Country] != 3 {
		t.Errorf("before %v after %v", c.Before, c.After)
	}
	if c, _ = Compare(spread(11), spread(13)[11:], nil, Coefficients{}); c.Before[NodeProvider] != 4 || c.After[NodeProvider] != 5 {
		t.Errorf("growing 11 to 13 spread nodes: %v → %v, want provider 4 → 5", c.Before, c.After)
	}
}

// A node removed and added back in one change stays a member.
func TestCompareRefusesAChangeThatDoesNotFitTheMembership(t *testing.T) {
	members := spread(4)
	for _, tc := range []struct {
		add    []Node
		remove []string
		want   string
	}{
		{nil, []string{"zz"}, "removes node zz, which is not a member"},
		{nil, []string{"m01", "m01"}, "removes node m01 twice"},
		{[]Node{members[0]}, nil, "adds node m00, which is already a member"},
		{[]Node{nd("x", "", "", "", ""), nd("x", "", "", "", "")}, nil, "adds node x twice"},
		{[]Node{{}}, nil, "adds a node without an id"},
	} {
		if _, err := Compare(members, tc.add, tc.remove, Coefficients{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("add %v remove %v: error %v, want %q", tc.add, tc.remove, err, tc.want)
		}
	}
	if _, err := Compare(append(spread(2), spread(2)[0]), nil, nil, Coefficients{}); err == nil || !strings.Contains(err.Error(), "member node m00 is listed twice") {
		t.Errorf("a repeated member: %v", err)
	}
	if c, err := Compare(members, []Node{members[0]}, []string{"m00"}, Coefficients{}); err != nil || c.Before != c.After {
		t.Errorf("removing and re-adding m00: %v, %v → %v", err, c.Before, c.After)
	}
}
