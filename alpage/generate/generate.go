// Package generate writes the proposals that close the drift between the
// declared fleet and the live registry: `alp plan --generate`. It is pure:
// it reads the declared resources, the live facts reconcile fetched
// (alpage/reconcile.Live), and what proposals already pending will change,
// hands them to every kind in alpage/kinds.All as a kinds.Drift, and
// returns what the kinds generate in the order it must execute, plus a
// note for each drift no proposal alp makes can close.
//
// Each generated proposal is one a preflight accepts once the proposals
// before it (its After list) have executed: a kind says which changes each
// of its proposals waits on (a node leaves its old subnet before it joins
// another, leaves its subnet before it is removed, an operator's nodes go
// before the operator, the operators before their provider), and Generate
// orders by that, holding no list of kinds. Drift that is already being
// closed — by a declared proposal not yet executed, or by an open proposal
// governance shows — is not generated again.
package generate

import (
	"fmt"
	"maps"
	"slices"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/reconcile"
)

// Op is what one change does; Change is one thing a proposal changes
// on-chain (alpage/kinds says what each kind's proposals change).
type (
	Op     = kinds.Op
	Change = kinds.Change
)

// The changes a generated proposal makes.
const (
	OpAdd            = kinds.OpAdd
	OpRemove         = kinds.OpRemove
	OpDeploy         = kinds.OpDeploy
	OpAdmins         = kinds.OpAdmins
	OpRemoveNode     = kinds.OpRemoveNode
	OpRemoveOperator = kinds.OpRemoveOperator
	OpRemoveProvider = kinds.OpRemoveProvider
)

// Input is what Generate reads.
type Input struct {
	Res  *config.Resources
	Live *reconcile.Live
	// Pending are the changes proposals already under way will make:
	// declared proposals not yet executed, rejected or failed, and open
	// proposals governance shows by the neuron (see Pending*).
	Pending []Change
	// Made are the changes of declared proposals recorded as executed or
	// under way (Made), each naming its proposal: a generated proposal
	// that would undo one is left out, and the stale resource noted.
	Made map[Change]string
	// Taken are proposal names already used, in proposals.hcl or
	// state.json; a generated name that would clash gets a suffix.
	Taken map[string]bool
	// Topology is each node's health and place, read at Live's registry
	// version (preflight.Fetcher.Topology); nil leaves unhealthy members
	// as they are.
	Topology *kinds.Topology
}

// Result is what Generate found.
type Result struct {
	Proposals []*Proposal
	// Notes are drift no generated proposal closes, each saying why.
	Notes []string
}

// Generate computes the proposals that close in's drift: what every kind
// in kinds.All generates from it, named uniquely, ordered after what each
// waits on, without any all of whose changes are pending; then the notes
// of drift no kind closes.
func Generate(in Input) Result {
	d := drift(in)
	taken := map[string]bool{}
	for n := range in.Taken {
		taken[n] = true
	}
	var out []*Proposal
	var notes []string
	for _, k := range kinds.All {
		gs, ns := k.Generate(d)
		notes = append(notes, ns...)
		for _, g := range gs {
			p := &Proposal{Name: g.Name, Kind: config.Kind(k.Name()), Title: g.Title, Summary: g.Summary,
				Closes: g.Body.Closes(), Body: g.Body, ref: d.Ref, waits: g.After}
			if len(p.Closes) > 0 && allPending(p.Closes, d.Pending) {
				continue
			}
			if note, ok := undoNote(in, p); ok {
				notes = append(notes, note)
				continue
			}
			for i := 2; taken[p.Name]; i++ {
				p.Name = fmt.Sprintf("%s-%d", g.Name, i)
			}
			taken[p.Name] = true
			out = append(out, p)
		}
	}
	return Result{Proposals: order(out), Notes: append(notes, kinds.Unclosable(d)...)}
}

// undoNote is the note for a generated proposal that would undo what a
// recorded proposal made: the declaration is stale, not the registry.
func undoNote(in Input, p *Proposal) (string, bool) {
	for _, c := range p.Closes {
		m, ok := undoes(c, in.Made)
		if !ok {
			continue
		}
		stale := Away(in.Res, m)
		if stale == "" {
			stale = "declare what it made"
		}
		return fmt.Sprintf("not generating %s: it would undo %s; the declaration is stale: %s (to undo it after all, declare a proposal by hand)",
			p.Name, in.Made[m], stale), true
	}
	return "", false
}

// allPending says whether every change of cs is under way already.
func allPending(cs []Change, pending map[Change]bool) bool {
	for _, c := range cs {
		if !pending[c] {
			return false
		}
	}
	return true
}

// order sets each proposal's After to the other proposals that make a
// change it waits on, and orders ps so that each comes after those: in
// the order the kinds generated them (kinds.All's, then each kind's own)
// where nothing says otherwise. A proposal caught in a cycle keeps its
// place.
func order(ps []*Proposal) []*Proposal {
	closedBy := map[Change]*Proposal{}
	for _, p := range ps {
		for _, c := range p.Closes {
			closedBy[c] = p
		}
	}
	for _, p := range ps {
		p.After = nil
		for _, c := range p.waits {
			if q, ok := closedBy[c]; ok && q != p && !slices.Contains(p.After, q.Name) {
				p.After = append(p.After, q.Name)
			}
		}
		slices.Sort(p.After)
	}
	placed := map[string]bool{}
	out := make([]*Proposal, 0, len(ps))
	ready := func(p *Proposal) bool {
		for _, n := range p.After {
			if !placed[n] {
				return false
			}
		}
		return true
	}
	for len(out) < len(ps) {
		next := -1
		for i, p := range ps {
			if !placed[p.Name] && ready(p) {
				next = i
				break
			}
		}
		if next < 0 { // a cycle: the first left keeps its place
			next = slices.IndexFunc(ps, func(p *Proposal) bool { return !placed[p.Name] })
		}
		placed[ps[next].Name] = true
		out = append(out, ps[next])
	}
	return out
}

// drift is what the kinds generate from: in's declaration, the live facts
// reconcile read, and what is pending.
func drift(in Input) *kinds.Drift {
	res, live := in.Res, in.Live
	var f kinds.Fleet
	for _, s := range res.Subnets {
		f.Subnets = append(f.Subnets, kinds.FleetSubnet{ID: s.ID, Name: s.Name, Type: s.Type, CostSchedule: s.CostSchedule,
			SevEnabled: s.SevEnabled != nil && *s.SevEnabled, Admins: s.Admins, MinNakamoto: s.MinNakamoto})
	}
	for _, dc := range res.DataCenters {
		f.DataCenters = append(f.DataCenters, kinds.FleetDataCenter{ID: dc.ID, Name: dc.Name, Region: dc.Region})
	}
	for _, p := range res.NodeProviders {
		f.Providers = append(f.Providers, kinds.FleetProvider{ID: p.ID, Name: p.Name, Label: p.Label, Decommissioned: p.Decommissioned})
	}
	for _, o := range res.NodeOperators {
		f.Operators = append(f.Operators, kinds.FleetOperator{ID: o.ID, Name: o.Name, Decommissioned: o.Decommissioned, Provider: o.Provider, DC: o.DC,
			NodeAllowance: o.NodeAllowance, RewardableNodes: o.RewardableNodes, MaxRewardableNodes: o.MaxRewardableNodes, IPv6: o.IPv6})
	}
	for _, v := range res.GuestOSVersions {
		f.Versions = append(f.Versions, kinds.FleetVersion{ID: v.ID, Name: v.Name, Label: v.Label})
	}
	for _, v := range res.HostOSVersions {
		f.HostOSVersions = append(f.HostOSVersions, kinds.FleetVersion{ID: v.ID, Name: v.Name, Label: v.Label})
	}
	for _, n := range res.Nodes {
		f.Nodes = append(f.Nodes, kinds.FleetNode{ID: n.ID, Name: n.Name, Subnet: n.Subnet, Operator: n.Operator, Version: n.Version,
			HostOS: n.HostOS, Decommissioned: n.Decommissioned, Chip: n.Chip, Replace: n.Replace})
	}
	c := kinds.Chain{SubnetListErr: live.SubnetListErr, Elected: live.Elected, ElectedErr: live.ElectedErr,
		HostOSElected: live.HostOSElected, HostOSElectedErr: live.HostOSElectedErr,
		Subnets: map[string]kinds.ChainSubnet{}, DataCenters: map[string]kinds.ChainDataCenter{}, Providers: map[string]kinds.ChainProvider{},
		Operators: map[string]kinds.ChainOperator{}, Nodes: map[string]kinds.ChainNode{}, Versions: map[string]string{}, Topology: in.Topology}
	for id, s := range live.Subnets {
		c.Subnets[id] = kinds.ChainSubnet{Found: s.Found, Err: s.Err, Members: s.Members, Type: s.Type, CostSchedule: s.CostSchedule,
			ReplicaVersion: s.ReplicaVersion, SevEnabled: s.SevEnabled, Admins: s.Admins}
	}
	for id, dc := range live.DataCenters {
		c.DataCenters[id] = kinds.ChainDataCenter{Found: dc.Found, Region: dc.Region}
	}
	for id, p := range live.Providers {
		c.Providers[id] = kinds.ChainProvider{Known: p.Known, Err: p.Err, Operators: slices.Sorted(maps.Keys(p.Operators))}
	}
	for id, o := range live.Operators {
		owned, listed := live.OperatorNodes[id]
		c.Operators[id] = kinds.ChainOperator{Found: o.Found, Err: o.Err, NodesListed: listed, Nodes: owned.Nodes, NodesErr: owned.Err,
			Provider: o.Provider, DC: o.DC, NodeAllowance: o.NodeAllowance, RewardableNodes: o.RewardableNodes, IPv6: o.IPv6}
	}
	for id, n := range live.Nodes {
		c.Nodes[id] = kinds.ChainNode{Found: n.Found, Err: n.Err, Operator: n.Operator, Chip: n.Chip, HostOS: n.HostOS}
	}
	for id, v := range live.Versions {
		c.Versions[id] = v.Version
	}
	return kinds.NewDrift(f, c, in.Pending)
}
