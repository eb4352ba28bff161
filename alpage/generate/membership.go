package generate

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"alpnib.dev/alpage/kinds"
)

// move is one node's membership change and why.
type move struct {
	node ref
	why  string
}

// subnetMoves is one membership proposal's content.
type subnetMoves struct {
	add, remove []move
}

// membership generates, per subnet, the change_subnet_membership that
// makes its members the declared ones: first each subnet's removals and
// the additions of nodes that are free, then the additions of nodes that
// the first proposals free from another subnet.
func (g *gen) membership() {
	live := g.in.Live
	if live.SubnetListErr != "" {
		g.note("membership: the registry's subnet list could not be read (%s), so which subnet holds each node is not known; no membership proposal is generated", live.SubnetListErr)
		return
	}
	memberOf := map[string]string{}
	for id, s := range live.Subnets {
		for _, m := range s.Members {
			memberOf[m] = id
		}
	}
	first, second := map[string]*subnetMoves{}, map[string]*subnetMoves{}
	at := func(m map[string]*subnetMoves, subnet string) *subnetMoves {
		if m[subnet] == nil {
			m[subnet] = &subnetMoves{}
		}
		return m[subnet]
	}
	for _, n := range g.in.Res.Nodes {
		facts, read := live.Nodes[n.ID]
		cur := memberOf[n.ID]
		node := g.n.node(n.ID)
		switch {
		case !read || facts.Err != "":
			continue // unknown: reconcile says so
		case n.Decommissioned:
			if cur != "" && facts.Found {
				g.moveOut(at(first, cur), node, cur, "leaves the subnet: it is declared decommissioned, and the registry removes no subnet member")
			}
			continue
		case !facts.Found:
			if n.Subnet != "" {
				g.note("node %s is declared in subnet %s but is not registered: a node registers itself when it is onboarded, which is no proposal", n.Name, g.n.subnet(n.Subnet).word())
			}
			continue
		case cur == n.Subnet:
			continue
		}
		if cur != "" {
			why := "leaves the subnet: it is declared unassigned"
			if n.Subnet != "" {
				why = fmt.Sprintf("leaves the subnet: it is declared in subnet %s", g.n.subnet(n.Subnet).word())
			}
			g.moveOut(at(first, cur), node, cur, why)
		}
		if n.Subnet == "" {
			continue
		}
		if s := live.Subnets[n.Subnet]; !s.Found {
			if s.Err == "" {
				g.note("node %s is declared in subnet %s, which the registry does not have: creating a subnet is no proposal alp makes", n.Name, g.n.subnet(n.Subnet).word())
			}
			continue
		}
		c := Change{Op: OpAdd, Subject: n.ID, Target: n.Subnet}
		if g.pending[c] {
			continue
		}
		why := "joins the subnet: it is declared in it and is unassigned"
		target := at(first, n.Subnet)
		if cur != "" {
			why = fmt.Sprintf("joins the subnet: it is declared in it, once it has left subnet %s", g.n.subnet(cur).word())
			target = at(second, n.Subnet)
		}
		target.add = append(target.add, move{node, why})
	}
	for _, decl := range g.in.Res.Subnets {
		id, s := decl.ID, live.Subnets[decl.ID]
		if !s.Found {
			continue
		}
		for _, m := range s.Members {
			if g.n.Node[m] == nil {
				g.note("subnet %s: member %s has no node block; declare it (alp registry subnet prints one) or it stays as it is", g.n.subnet(id).word(), m)
			}
		}
	}
	for _, phase := range []map[string]*subnetMoves{first, second} {
		for _, subnet := range sortedSubnets(phase, g.n) {
			g.membershipProposal(g.n.subnet(subnet), phase[subnet])
		}
	}
}

// moveOut records node's removal from subnet unless it is pending.
func (g *gen) moveOut(m *subnetMoves, node ref, subnet, why string) {
	if g.pending[Change{Op: OpRemove, Subject: node.ID, Target: subnet}] || slices.ContainsFunc(m.remove, func(x move) bool { return x.node.ID == node.ID }) {
		return
	}
	m.remove = append(m.remove, move{node, why})
}

// sortedSubnets orders subnets by block name, undeclared ones by id after.
func sortedSubnets(m map[string]*subnetMoves, n names) []string {
	var ids []string
	for id, mv := range m {
		if len(mv.add)+len(mv.remove) > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := n.subnet(ids[i]), n.subnet(ids[j])
		if (a.Name == "") != (b.Name == "") {
			return a.Name != ""
		}
		return a.word()+a.ID < b.word()+b.ID
	})
	return ids
}

func (g *gen) membershipProposal(subnet ref, m *subnetMoves) {
	byID := func(a, b move) int { return strings.Compare(a.node.ID, b.node.ID) }
	slices.SortFunc(m.add, byID)
	slices.SortFunc(m.remove, byID)
	body := &kinds.Membership{SubnetID: subnet.ID}
	p := &Proposal{Body: body}
	var deps []Change
	for _, a := range m.add {
		body.Add = append(body.Add, kinds.NodeRef{ID: a.node.ID})
		// a node that moves in must first leave the subnet it is in
		for c := range g.closedBy {
			if c.Op == OpRemove && c.Subject == a.node.ID {
				deps = append(deps, c)
			}
		}
	}
	for _, r := range m.remove {
		body.Remove = append(body.Remove, kinds.NodeRef{ID: r.node.ID})
	}
	p.After = g.after(deps...)
	added, removed := refs(m.add), refs(m.remove)
	switch {
	case len(m.remove) == 0:
		p.Name = fmt.Sprintf("add-%s-to-%s", countOr(added, "nodes"), slug(subnet.word()))
		p.Title = fmt.Sprintf("Add nodes to subnet %s: %s", short(subnet.ID), shortList(added))
	case len(m.add) == 0:
		p.Name = fmt.Sprintf("remove-%s-from-%s", countOr(removed, "nodes"), slug(subnet.word()))
		p.Title = fmt.Sprintf("Remove nodes from subnet %s: %s", short(subnet.ID), shortList(removed))
	default:
		p.Name = fmt.Sprintf("replace-nodes-in-%s", slug(subnet.word()))
		p.Title = fmt.Sprintf("Replace nodes in subnet %s: add nodes %s; remove nodes %s", short(subnet.ID), shortList(added), shortList(removed))
	}
	var b strings.Builder
	verb := "Replace nodes in"
	switch {
	case len(m.remove) == 0:
		verb = "Add nodes to"
	case len(m.add) == 0:
		verb = "Remove nodes from"
	}
	fmt.Fprintf(&b, "# %s subnet %s.\n\n", verb, subnet.ID)
	if len(added) > 0 {
		fmt.Fprintf(&b, "- Add nodes %s\n", fullList(added))
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "- Remove nodes %s\n", fullList(removed))
	}
	b.WriteString("\nMotivation:\n")
	for _, mv := range slices.Concat(m.add, m.remove) {
		fmt.Fprintf(&b, "- %s %s.\n", mv.node.ID, mv.why)
	}
	p.Summary = b.String()
	g.add(p)
}

func refs(ms []move) []ref {
	out := make([]ref, len(ms))
	for i, m := range ms {
		out[i] = m.node
	}
	return out
}

// countOr is the one node's name, or "N-nodes".
func countOr(rs []ref, plural string) string {
	if len(rs) == 1 {
		return slug(rs[0].word())
	}
	return fmt.Sprintf("%d-%s", len(rs), plural)
}

// shortList is [abcde, fghij]: ids by their first group, as DFINITY's
// titles write them.
func shortList(rs []ref) string {
	var s []string
	for _, r := range rs {
		s = append(s, short(r.ID))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func fullList(rs []ref) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.ID)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
