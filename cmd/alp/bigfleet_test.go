package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/ic/principal"
)

// bigFleet is a synthetic IC of about 1,400 nodes, shaped like mainnet
// (the shape of alpage/decentral's synthetic fleet): 130 providers of
// power-law sizes in 100 data centers of 70 owners in 30 countries, a few
// countries far larger than the rest, and 39 subnets of 13 nodes built
// within the target topology's limits (one node per provider, data center
// and owner, two per country); the rest are unassigned. It is the devnet's
// fleet and the resources.hcl that declares it, every node in the subnet
// it is in.
type bigFleet struct {
	fleet   *devnet.Fleet
	subnets []string            // subnet ids, in block order (s00, s01, …)
	members map[string][]string // subnet id → member ids
	dcOf    map[string]string   // node id → data center id
	// declared is each node's declared subnet ("" for none).
	declared map[string]string
	nodeName map[string]string
	// marked are the members declared replace = true.
	marked map[string]bool
}

const bigVersion = "f7a20dd476ef99474b4f932fb0a24327bdeb4a67"

func pid(tag string) string { return principal.SelfAuthenticating([]byte(tag)).String() }

func newBigFleet(seed uint64) *bigFleet {
	rng := rand.New(rand.NewPCG(seed, 37))
	const countries, dcs, owners, providers, nodes, subnets, size = 30, 100, 70, 130, 1400, 39, 13
	zipf := func(n int) int {
		total := 0.0
		for i := range n {
			total += 1 / float64(i+1)
		}
		x := rng.Float64() * total
		for i := range n {
			if x -= 1 / float64(i+1); x <= 0 {
				return i
			}
		}
		return n - 1
	}
	b := &bigFleet{members: map[string][]string{}, dcOf: map[string]string{}, declared: map[string]string{}, nodeName: map[string]string{}, marked: map[string]bool{}}
	f := &devnet.Fleet{Versions: []devnet.FleetVersion{{ID: bigVersion, Release: "release-2026-11-13_03-21-base"}}}
	country := make([]string, dcs)
	owner := make([]string, dcs)
	for i := range dcs {
		country[i] = fmt.Sprintf("%c%c", 'A'+zipf(countries)/26, 'A'+zipf(countries)%26)
		o := i
		if i >= owners {
			o = rng.IntN(owners / 4)
		}
		owner[i] = fmt.Sprintf("owner%02d", o)
		f.DataCenters = append(f.DataCenters, devnet.FleetDataCenter{ID: fmt.Sprintf("dc%03d", i), Region: "Region," + country[i] + ",City", Owner: owner[i]})
	}
	// providers: power-law weights, each in one to three data centers, one
	// operator per (provider, data center)
	weights := make([]float64, providers)
	total := 0.0
	for i := range weights {
		weights[i] = 1 / float64(i+3)
		total += weights[i]
	}
	type op struct{ id, dc string }
	ops := make([][]op, providers)
	for p := range providers {
		prov := pid(fmt.Sprintf("provider-%03d", p))
		f.NodeProviders = append(f.NodeProviders, devnet.FleetProvider{ID: prov, Name: fmt.Sprintf("Provider %03d", p)})
		for range 1 + rng.IntN(3) {
			dc := fmt.Sprintf("dc%03d", rng.IntN(dcs))
			if slices.ContainsFunc(ops[p], func(o op) bool { return o.dc == dc }) {
				continue
			}
			o := op{pid(fmt.Sprintf("operator-%03d-%s", p, dc)), dc}
			ops[p] = append(ops[p], o)
			f.NodeOperators = append(f.NodeOperators, devnet.FleetOperator{ID: o.id, Provider: prov, DC: dc})
		}
	}
	type node struct {
		id, op, dc, owner, country string
		provider                   int
	}
	var all []node
	for i := range nodes {
		x := rng.Float64() * total
		p := 0
		for ; p < providers-1; p++ {
			if x -= weights[p]; x <= 0 {
				break
			}
		}
		o := ops[p][rng.IntN(len(ops[p]))]
		dci := 0
		fmt.Sscanf(o.dc, "dc%03d", &dci)
		n := node{pid(fmt.Sprintf("node-%04d", i)), o.id, o.dc, owner[dci], country[dci], p}
		all = append(all, n)
		b.dcOf[n.id] = n.dc
		b.nodeName[n.id] = fmt.Sprintf("n%04d", i)
		f.Nodes = append(f.Nodes, devnet.FleetNode{ID: n.id, Operator: n.op, Version: bigVersion})
	}
	// subnets: greedily, each taking unassigned nodes within the limits
	used := map[string]bool{}
	for s := range subnets {
		id := pid(fmt.Sprintf("subnet-%02d", s))
		prov, dc, own, ctry := map[int]bool{}, map[string]bool{}, map[string]bool{}, map[string]int{}
		var members []string
		for _, n := range all {
			if len(members) == size {
				break
			}
			if used[n.id] || prov[n.provider] || dc[n.dc] || own[n.owner] || ctry[n.country] >= 2 {
				continue
			}
			prov[n.provider], dc[n.dc], own[n.owner] = true, true, true
			ctry[n.country]++
			used[n.id] = true
			members = append(members, n.id)
			b.declared[n.id] = id
		}
		if len(members) < size {
			break
		}
		b.subnets = append(b.subnets, id)
		b.members[id] = members
		f.Subnets = append(f.Subnets, devnet.FleetSubnet{ID: id, Version: bigVersion, Members: members})
	}
	f.Neurons = []devnet.FleetNeuron{{ID: 4242, Controller: devnet.IdentityRef, StakeE8s: 100000000000}}
	b.fleet = f
	return b
}

// hcl is resources.hcl declaring the whole fleet, each node in its
// declared subnet.
func (b *bigFleet) hcl() string {
	var w strings.Builder
	subnetName := map[string]string{}
	for i, id := range b.subnets {
		subnetName[id] = fmt.Sprintf("s%02d", i)
		fmt.Fprintf(&w, "subnet %q {\n  id = %q\n}\n\n", subnetName[id], id)
	}
	for _, dc := range b.fleet.DataCenters {
		fmt.Fprintf(&w, "data_center %q {\n  id     = %q\n  region = %q\n}\n\n", dc.ID, dc.ID, dc.Region)
	}
	provName := map[string]string{}
	for i, p := range b.fleet.NodeProviders {
		provName[p.ID] = fmt.Sprintf("p%03d", i)
		fmt.Fprintf(&w, "node_provider %q {\n  id = %q\n}\n\n", provName[p.ID], p.ID)
	}
	opName := map[string]string{}
	for i, o := range b.fleet.NodeOperators {
		opName[o.ID] = fmt.Sprintf("o%03d", i)
		fmt.Fprintf(&w, "node_operator %q {\n  id       = %q\n  provider = node_provider.%s.id\n  dc       = data_center.%s.id\n}\n\n", opName[o.ID], o.ID, provName[o.Provider], o.DC)
	}
	fmt.Fprintf(&w, "guestos_version \"current\" {\n  id      = %q\n  default = true\n}\n\n", bigVersion)
	for _, n := range b.fleet.Nodes {
		fmt.Fprintf(&w, "node %q {\n  id       = %q\n  operator = node_operator.%s.id\n", b.nodeName[n.ID], n.ID, opName[n.Operator])
		if s := b.declared[n.ID]; s != "" {
			fmt.Fprintf(&w, "  subnet   = subnet.%s.id\n", subnetName[s])
		}
		if b.marked[n.ID] {
			w.WriteString("  replace  = true\n")
		}
		w.WriteString("}\n\n")
	}
	return w.String()
}

// setDown makes node id not answer, so the dashboard lists it DOWN.
func (b *bigFleet) setDown(id string) {
	for i := range b.fleet.Nodes {
		if b.fleet.Nodes[i].ID == id {
			no := false
			b.fleet.Nodes[i].Reachable = &no
		}
	}
}

// unassigned are the nodes in no subnet, in fleet order.
func (b *bigFleet) unassigned() []string {
	var out []string
	for _, n := range b.fleet.Nodes {
		if b.declared[n.ID] == "" {
			out = append(out, n.ID)
		}
	}
	return out
}
