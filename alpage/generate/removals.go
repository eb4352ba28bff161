package generate

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/kinds"
)

// removals generates remove_nodes for the decommissioned nodes still
// registered, then remove_node_operators for the decommissioned operators
// that will own no node, then remove_node_provider for each decommissioned
// provider that will have no operator: each after what it waits on.
func (g *gen) removals() {
	live := g.in.Live
	// nodes
	var nodes []ref
	var deps []Change
	gone := map[string]bool{} // node ids no longer registered once these execute
	for _, n := range g.in.Res.Nodes {
		f, read := live.Nodes[n.ID]
		if !n.Decommissioned || !read || f.Err != "" {
			continue
		}
		if !f.Found || g.pending[Change{Op: OpRemoveNode, Subject: n.ID, Target: ""}] {
			gone[n.ID] = true
			continue
		}
		gone[n.ID] = true
		nodes = append(nodes, g.n.node(n.ID))
		for c := range g.closedBy {
			if c.Op == OpRemove && c.Subject == n.ID {
				deps = append(deps, c)
			}
		}
	}
	if len(nodes) > 0 {
		slices.SortFunc(nodes, func(a, b ref) int { return strings.Compare(a.ID, b.ID) })
		body := &kinds.RemoveNodes{}
		for _, n := range nodes {
			body.Nodes = append(body.Nodes, kinds.NodeRef{ID: n.ID})
		}
		p := &Proposal{Body: body, After: g.after(deps...)}
		p.Name = "remove-" + countOr(nodes, "nodes")
		if len(nodes) == 1 {
			p.Name = "remove-node-" + slug(nodes[0].word())
			if strings.HasPrefix(slug(nodes[0].word()), "node") {
				p.Name = "remove-" + slug(nodes[0].word())
			}
		}
		p.Title = "Remove decommissioned nodes " + shortList(nodes)
		p.Summary = fmt.Sprintf("Remove nodes %s from the registry.\n\nMotivation: the nodes are decommissioned; removing their records frees their node operators' node allowance.\n", fullList(nodes))
		g.add(p)
	}

	// operators
	var ops []ref
	var opDeps []Change
	removedOps := map[string]bool{}
	for _, o := range g.in.Res.NodeOperators {
		if !o.Decommissioned {
			continue
		}
		f, read := live.Operators[o.ID]
		switch {
		case !read || f.Err != "":
			continue
		case !f.Found || g.pending[Change{Op: OpRemoveOperator, Subject: o.ID, Target: ""}]:
			removedOps[o.ID] = true
			continue
		}
		owned, listed := live.OperatorNodes[o.ID]
		if !listed || owned.Err != "" {
			g.note("node operator %s is declared decommissioned, but the nodes it owns could not be listed; no remove_node_operators is generated for it", o.Name)
			continue
		}
		var left []string
		for _, n := range owned.Nodes {
			if !gone[n] {
				left = append(left, n)
			} else {
				opDeps = append(opDeps, Change{Op: OpRemoveNode, Subject: n, Target: ""})
			}
		}
		if len(left) > 0 {
			g.note("node operator %s is declared decommissioned but still owns nodes %s that are not; the registry would skip it, so no remove_node_operators is generated for it", o.Name, "["+strings.Join(left, ", ")+"]")
			continue
		}
		removedOps[o.ID] = true
		ops = append(ops, g.n.operator(o.ID))
	}
	if len(ops) > 0 {
		body := &kinds.RemoveNodeOperators{}
		for _, o := range ops {
			body.Operators = append(body.Operators, o.ID)
		}
		p := &Proposal{Body: body, After: g.after(opDeps...)}
		p.Name = "remove-" + countOr(ops, "node-operators")
		if len(ops) == 1 {
			p.Name = "remove-operator-" + slug(ops[0].word())
		}
		p.Title = "Remove node operators " + shortList(ops)
		p.Summary = fmt.Sprintf("Remove the records of node operators %s from the registry.\n\nMotivation: the node operators are decommissioned and own no nodes.\n", fullList(ops))
		g.add(p)
	}

	// providers
	for _, np := range g.in.Res.NodeProviders {
		f, read := live.Providers[np.ID]
		if !np.Decommissioned || !read || f.Err != "" || !f.Known || g.pending[Change{Op: OpRemoveProvider, Subject: np.ID, Target: ""}] {
			continue
		}
		var left []string
		var pDeps []Change
		for op := range f.Operators {
			if removedOps[op] {
				pDeps = append(pDeps, Change{Op: OpRemoveOperator, Subject: op, Target: ""})
			} else {
				left = append(left, op)
			}
		}
		if len(left) > 0 {
			slices.Sort(left)
			g.note("node provider %s is declared decommissioned but still has node operators %s that are not; no remove_node_provider is generated", np.Name, "["+strings.Join(left, ", ")+"]")
			continue
		}
		provider := g.n.provider(np.ID)
		p := &Proposal{Body: &kinds.RemoveNodeProvider{NodeProviderID: np.ID}, After: g.after(pDeps...)}
		p.Name = "remove-provider-" + slug(provider.word())
		label := np.Label
		if label == "" {
			label = short(np.ID)
		}
		p.Title = "Remove node provider " + label
		p.Summary = fmt.Sprintf("Remove node provider %s (principal %s).\n\nMotivation: the node provider is decommissioned; none of its node operators remain in the registry.\n", label, np.ID)
		g.add(p)
	}
}
