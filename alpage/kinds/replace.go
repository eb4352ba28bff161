package kinds

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/decentral"
)

// Topology is each node's health and place, read at one registry version
// for reconcile, plan, generate and the dry run alike: the health from the
// ICP dashboard and the node's own status endpoint, the place from the
// node, operator and data center records (ReadPlaces).
type Topology struct {
	Health map[string]HealthFacts `json:"health"`
	Places Places                 `json:"places"`
}

// unhealthy says the node is known down or degraded; a node whose health
// is unknown is not replaced on no evidence.
func (t *Topology) unhealthy(id string) bool {
	h := t.Health[id].Health
	return h == HealthDown || h == HealthDegraded
}

// generateReplacements proposes, for each declared subnet that no other
// membership proposal changes, the replacement of its declared members the
// topology says are down or degraded, and of those marked replace = true: chosen by decentral.Replace from the
// declared, healthy, unassigned pool, each keeping every Nakamoto
// coefficient at or above the subnet's minimum. A subnet for which no
// choice keeps the minimums gets a note naming the attribute instead.
// Subnets are served in block-name order, each taking its replacements out
// of the pool, so two runs write the same plan.
func generateReplacements(d *Drift, busy map[string]bool) (out []Generated, notes []string) {
	t := d.Chain.Topology
	if t == nil {
		return nil, nil
	}
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	memberOf := d.memberOf()
	var pool []decentral.Node
	for _, n := range d.Fleet.Nodes {
		facts := d.Chain.Nodes[n.ID]
		place, placed := t.Places.Nodes[n.ID]
		if n.Subnet != "" || n.Decommissioned || !facts.Found || facts.Err != "" || memberOf[n.ID] != "" || !placed ||
			!t.Health[n.ID].Healthy() || d.pendingAnywhere(n.ID) {
			continue
		}
		pool = append(pool, place)
	}
	slices.SortFunc(pool, func(a, b decentral.Node) int { return strings.Compare(a.ID, b.ID) })
	subnets := slices.Clone(d.Fleet.Subnets)
	slices.SortFunc(subnets, func(a, b FleetSubnet) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range subnets {
		live := d.Chain.Subnets[s.ID]
		if !live.Found || busy[s.ID] {
			continue
		}
		var replace []string
		for _, m := range live.Members {
			if b := d.n.nodes[m]; b != nil && b.Subnet == s.ID && (b.Replace || t.unhealthy(m)) && !d.Pending[Change{Op: OpRemove, Subject: m, Target: s.ID}] {
				replace = append(replace, m)
			}
		}
		if len(replace) == 0 {
			continue
		}
		word := d.n.subnet(s.ID).word()
		members := make([]decentral.Node, 0, len(live.Members))
		for _, m := range live.Members {
			p, ok := t.Places.Nodes[m]
			if !ok {
				note("subnet %s: members %s are to be replaced, but where member %s is could not be read (%s), so no replacement is chosen", word, strings.Join(replace, ", "), m, t.Places.Err[m])
				members = nil
				break
			}
			members = append(members, p)
		}
		if members == nil {
			continue
		}
		minimum, _ := minimumFor(s.ID, s.MinNakamoto, len(members))
		res, err := decentral.Replace(decentral.Request{Members: members, Replace: replace, Candidates: pool, Minimum: minimum})
		if err != nil {
			note("subnet %s: no replacement is chosen: %v", word, err)
			continue
		}
		if res.Infeasible != nil {
			note("subnet %s: members %s are to be replaced (not healthy, or marked), but no replacement from the %d declared, healthy, unassigned nodes keeps the subnet's Nakamoto minimums (%s): %s; no proposal is generated: declare more unassigned nodes, or lower min_nakamoto_coefficients",
				word, strings.Join(replace, ", "), len(pool), minimum, res.Infeasible)
			continue
		}
		mv := &subnetMoves{}
		var added, removed []decentral.Node
		for _, c := range res.Choices {
			reason := strings.TrimPrefix(c.Reason(minimum), c.Chosen.ID+" replaces "+c.Replaced+": ")
			mv.add = append(mv.add, move{node: d.n.node(c.Chosen.ID), why: fmt.Sprintf("joins the subnet in place of %s: %s", c.Replaced, reason)})
			why := "leaves the subnet: it is marked for replacement (replace = true)"
			if h := t.Health[c.Replaced]; t.unhealthy(c.Replaced) {
				why = fmt.Sprintf("leaves the subnet: it is %s (%s)", h.Health, h.Why)
			}
			mv.remove = append(mv.remove, move{node: d.n.node(c.Replaced), why: why})
			added = append(added, c.Chosen)
			removed = append(removed, decentral.Node{ID: c.Replaced})
			pool = slices.DeleteFunc(pool, func(n decentral.Node) bool { return n.ID == c.Chosen.ID })
		}
		g := membershipProposal(d.n.subnet(s.ID), mv)
		g.Summary += fmt.Sprintf("\nNakamoto coefficients of the subnet before → after: %s.\n", sideBySide(res.Before, res.After, minimum))
		out = append(out, g)
		var redeclare []string
		for i := range added {
			gone := fmt.Sprintf("node %s in none", d.n.node(removed[i].ID).word())
			if b := d.n.nodes[removed[i].ID]; b != nil && b.Replace {
				gone += " without replace"
			}
			redeclare = append(redeclare, fmt.Sprintf("node %s in subnet %s and %s", d.n.node(added[i].ID).word(), word, gone))
		}
		note("%s replaces members of subnet %s; once it executes, declare %s, or reconcile reports the swap as drift", g.Name, word, strings.Join(redeclare, "; "))
	}
	return out, notes
}

// sideBySide is decentral's before → after per attribute, with minimums.
func sideBySide(before, after, minimum decentral.Coefficients) string {
	return decentral.Comparison{Before: before, After: after, Minimum: minimum}.String()
}

// pendingAnywhere says whether a pending change adds id to any subnet.
func (d *Drift) pendingAnywhere(id string) bool {
	for c := range d.Pending {
		if c.Op == OpAdd && c.Subject == id {
			return true
		}
	}
	return false
}
