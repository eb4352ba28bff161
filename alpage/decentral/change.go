package decentral

import (
	"fmt"
	"slices"
	"strings"
)

// Row is one attribute's coefficient before and after a membership change,
// against the subnet's minimum for it.
type Row struct {
	Attribute     Attribute
	Before, After int
	Minimum       int
}

// Decreased says the change lowers the coefficient.
func (r Row) Decreased() bool { return r.After < r.Before }

// BelowMinimum says the coefficient after the change is below the minimum.
func (r Row) BelowMinimum() bool { return r.After < r.Minimum }

// Breaks says the change takes a coefficient that met the minimum below it;
// a subnet already below its minimum is BelowMinimum without Breaks.
func (r Row) Breaks() bool { return r.BelowMinimum() && r.Before >= r.Minimum }

// Comparison is a membership change seen through its coefficients.
type Comparison struct {
	Before, After Coefficients
	Minimum       Coefficients
	// Rows holds one row per attribute, in attribute order.
	Rows [NumAttributes]Row
}

// Decreased lists the attributes whose coefficient the change lowers.
func (c Comparison) Decreased() []Attribute {
	return c.filter(Row.Decreased)
}

// BelowMinimum lists the attributes whose coefficient is below the minimum
// after the change.
func (c Comparison) BelowMinimum() []Attribute {
	return c.filter(Row.BelowMinimum)
}

// Breaks lists the attributes the change takes from meeting the minimum to
// below it.
func (c Comparison) Breaks() []Attribute {
	return c.filter(Row.Breaks)
}

func (c Comparison) filter(keep func(Row) bool) []Attribute {
	var out []Attribute
	for _, r := range c.Rows {
		if keep(r) {
			out = append(out, r.Attribute)
		}
	}
	return out
}

// String lists each attribute's coefficient before and after, with its
// minimum: "node_provider 5→5 (minimum 5), data_center 5→4 (minimum 5), ...".
func (c Comparison) String() string { return sideBySide(c.Before, c.After, c.Minimum) }

// sideBySide is before and after per attribute, with the minimum when set.
func sideBySide(before, after, minimum Coefficients) string {
	var b strings.Builder
	for _, a := range Attributes {
		if a > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d→%d", a, before[a], after[a])
		if minimum[a] > 0 {
			fmt.Fprintf(&b, " (minimum %d)", minimum[a])
		}
	}
	return b.String()
}

// Compare computes a subnet's coefficients before and after a membership
// change that removes the members with the ids in remove and adds the nodes
// in add, and holds them against the subnet's minimum (zero for none). It
// refuses a change that removes a node that is not a member, adds one that is
// (and is not removed in the same change), or names a node twice.
func Compare(members []Node, add []Node, remove []string, minimum Coefficients) (Comparison, error) {
	after, err := applyChange(members, add, remove)
	if err != nil {
		return Comparison{}, err
	}
	c := Comparison{Before: Compute(members), After: Compute(after), Minimum: minimum}
	for _, a := range Attributes {
		c.Rows[a] = Row{Attribute: a, Before: c.Before[a], After: c.After[a], Minimum: minimum[a]}
	}
	return c, nil
}

// applyChange is members without remove and with add, in that order.
func applyChange(members []Node, add []Node, remove []string) ([]Node, error) {
	ids, err := indexNodes("member", members)
	if err != nil {
		return nil, err
	}
	removing := map[string]bool{}
	for _, id := range remove {
		if _, ok := ids[id]; !ok {
			return nil, fmt.Errorf("change removes node %s, which is not a member of the subnet", id)
		}
		if removing[id] {
			return nil, fmt.Errorf("change removes node %s twice", id)
		}
		removing[id] = true
	}
	adding := map[string]bool{}
	for _, n := range add {
		switch {
		case n.ID == "":
			return nil, fmt.Errorf("change adds a node without an id")
		case adding[n.ID]:
			return nil, fmt.Errorf("change adds node %s twice", n.ID)
		}
		if _, ok := ids[n.ID]; ok && !removing[n.ID] {
			return nil, fmt.Errorf("change adds node %s, which is already a member of the subnet", n.ID)
		}
		adding[n.ID] = true
	}
	after := slices.DeleteFunc(slices.Clone(members), func(n Node) bool { return removing[n.ID] })
	return append(after, add...), nil
}

// indexNodes maps each node's id to its index, refusing an empty or repeated id.
func indexNodes(what string, nodes []Node) (map[string]int, error) {
	ids := make(map[string]int, len(nodes))
	for i, n := range nodes {
		if n.ID == "" {
			return nil, fmt.Errorf("%s %d has no node id", what, i+1)
		}
		if _, dup := ids[n.ID]; dup {
			return nil, fmt.Errorf("%s node %s is listed twice", what, n.ID)
		}
		ids[n.ID] = i
	}
	return ids, nil
}
