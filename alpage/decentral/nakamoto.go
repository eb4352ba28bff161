// Package decentral measures how decentralized a subnet's membership is, the
// way dfinity/dre measures it, and chooses replacement nodes that keep it so.
//
// A subnet's Nakamoto coefficient for an attribute (node provider, data
// center, data center owner, country) is the smallest number of actors
// sharing a value of that attribute who together hold more than a third of
// the subnet's nodes: the number who would have to collude to stop it. A
// subnet of 13 nodes, each with its own provider, has a provider coefficient
// of 5 (13/3 is 4 when rounded down, and five providers are needed to hold
// more than 4 nodes).
//
// Everything here is pure: callers read health and topology, filter the pool
// of candidates, and render the results. Nothing here does I/O.
package decentral

import (
	"fmt"
	"slices"
	"strings"
)

// Attribute is a property of a node that an actor controls. The order of the
// constants is the order in which results list attributes and in which the
// replacement chooser breaks its last ties (dre's NodeFeature order).
type Attribute int

// The attributes dre computes a coefficient for, in dre's order.
const (
	NodeProvider Attribute = iota
	DataCenter
	DataCenterOwner
	Country
	// NumAttributes is the number of attributes; not an attribute.
	NumAttributes
)

// Attributes lists every attribute in order.
var Attributes = [NumAttributes]Attribute{NodeProvider, DataCenter, DataCenterOwner, Country}

var attributeNames = [NumAttributes]string{"node_provider", "data_center", "data_center_owner", "country"}

// String is the attribute's name as dre spells it (node_provider, ...), also
// the key a subnet's declared minimum uses.
func (a Attribute) String() string {
	if a < 0 || a >= NumAttributes {
		return fmt.Sprintf("attribute(%d)", int(a))
	}
	return attributeNames[a]
}

// AttributeNamed returns the attribute spelt name (as String spells it).
func AttributeNamed(name string) (Attribute, bool) {
	i := slices.Index(attributeNames[:], name)
	return Attribute(i), i >= 0
}

// Unknown is the actor every node whose value for an attribute is unknown
// ("") counts under: unknown nodes are assumed to collude, as in dre.
const Unknown = "unknown"

// Node is a node and the actors behind it. An empty value is unknown.
type Node struct {
	ID              string
	Provider        string
	DataCenter      string
	DataCenterOwner string
	// Country is the second field of the data center's region; see
	// CountryOfRegion.
	Country string
}

// NewNode is a node from the registry's facts: its provider (from its
// operator's record), its data center's id, owner and region.
func NewNode(id, provider, dataCenter, owner, region string) Node {
	return Node{ID: id, Provider: provider, DataCenter: dataCenter, DataCenterOwner: owner, Country: CountryOfRegion(region)}
}

// Value is the node's actor for attribute a, Unknown when it is not known.
func (n Node) Value(a Attribute) string {
	var v string
	switch a {
	case NodeProvider:
		v = n.Provider
	case DataCenter:
		v = n.DataCenter
	case DataCenterOwner:
		v = n.DataCenterOwner
	case Country:
		v = n.Country
	}
	if v == "" {
		return Unknown
	}
	return v
}

// CountryOfRegion is the country in a data center's registry region
// ("Europe,CH,Zurich" is CH). A region that is not three comma-separated
// fields names no country (""), as in dre, which splits it in at most three
// and falls back to unknown unless there are exactly three.
func CountryOfRegion(region string) string {
	parts := strings.SplitN(region, ",", 3)
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// Coefficients holds one Nakamoto coefficient per attribute, indexed by
// Attribute. A minimum is a Coefficients too, where 0 asks for nothing.
type Coefficients [NumAttributes]int

// String lists the coefficients as name=value pairs in attribute order.
func (c Coefficients) String() string {
	var b strings.Builder
	for _, a := range Attributes {
		if a > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", a, c[a])
	}
	return b.String()
}

// Below lists, in attribute order, the attributes whose coefficient is below
// the minimum min asks for.
func (c Coefficients) Below(min Coefficients) []Attribute {
	var out []Attribute
	for _, a := range Attributes {
		if c[a] < min[a] {
			out = append(out, a)
		}
	}
	return out
}

// deficit is how far c falls short of min, summed over the attributes.
func (c Coefficients) deficit(min Coefficients) int {
	d := 0
	for _, a := range Attributes {
		if c[a] < min[a] {
			d += min[a] - c[a]
		}
	}
	return d
}

// Coefficient is the Nakamoto coefficient of a subnet whose actors hold
// counts nodes each (in any order; counts is not changed): the fewest actors,
// largest first, who together hold more than a third of the nodes, that
// third rounded down. No nodes give 0. This is dre's nakamoto(): a subnet of
// 13 needs more than 4 nodes, of 6 more than 2.
func Coefficient(counts []int) int {
	sorted := slices.Clone(counts)
	return coefficientSorting(sorted)
}

// coefficientSorting is Coefficient, sorting counts in place.
func coefficientSorting(counts []int) int {
	total := 0
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	slices.SortFunc(counts, func(a, b int) int { return b - a })
	threshold := total / 3
	held := 0
	for i, c := range counts {
		held += c
		if held > threshold {
			return i + 1
		}
	}
	return len(counts) // unreachable: the counts sum to more than a third
}

// Actor is one value of an attribute and how many of a subnet's nodes it holds.
type Actor struct {
	Name  string
	Nodes int
}

// Actors lists the actors of attribute a among nodes, the largest first,
// equal ones by name.
func Actors(nodes []Node, a Attribute) []Actor {
	counts := map[string]int{}
	for _, n := range nodes {
		counts[n.Value(a)]++
	}
	out := make([]Actor, 0, len(counts))
	for name, c := range counts {
		out = append(out, Actor{name, c})
	}
	slices.SortFunc(out, func(x, y Actor) int {
		if x.Nodes != y.Nodes {
			return y.Nodes - x.Nodes
		}
		return strings.Compare(x.Name, y.Name)
	})
	return out
}

// Compute is the subnet's coefficient for every attribute.
func Compute(nodes []Node) Coefficients {
	var c Coefficients
	for _, a := range Attributes {
		as := Actors(nodes, a)
		counts := make([]int, len(as))
		for i, x := range as {
			counts[i] = x.Nodes
		}
		c[a] = coefficientSorting(counts)
	}
	return c
}

// Target topology limits: at most this many of a subnet's nodes may share a
// node provider, a data center or a data center owner...
const limitPerProvider = 1

// ...and at most this many a country, or countryLimitLarge in a subnet of
// largeSubnet nodes or more (NNS motion proposals 125549 and 132136).
const (
	countryLimitSmall = 2
	countryLimitLarge = 3
	largeSubnet       = 28
)

// DefaultMinimums is the minimum coefficient per attribute for a subnet of
// size nodes that the IC's target topology guarantees, the topology dre's
// business rules hold subnets to: at most one node per provider, data
// center and data center owner, and at most two per country (three in a
// subnet of 28 nodes or more). A subnet within those limits has at least
// these coefficients: 5, 5, 5 and 3 for 13 nodes; 10, 10, 10 and 4 for 28.
func DefaultMinimums(size int) Coefficients {
	var m Coefficients
	if size <= 0 {
		return m
	}
	country := countryLimitSmall
	if size >= largeSubnet {
		country = countryLimitLarge
	}
	for _, a := range Attributes {
		limit := limitPerProvider
		if a == Country {
			limit = country
		}
		m[a] = MinimumForLimit(size, limit)
	}
	return m
}

// MinimumForLimit is the coefficient a subnet of size nodes has at least
// when no actor holds more than limit of them: the nodes past a third,
// divided among actors of limit nodes each, rounded up.
func MinimumForLimit(size, limit int) int {
	if size <= 0 || limit <= 0 {
		return 0
	}
	need := size/3 + 1
	return (need + limit - 1) / limit
}
