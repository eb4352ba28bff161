package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
)

// RemoveNodes is a "remove_nodes" proposal's block: deregister nodes.
type RemoveNodes struct {
	Nodes []NodeRef `hcl:"node,block" since:"v0.5.0" doc:"A node to deregister. Repeat the block for each one."`
}

// removeNodes is the kind: remove_nodes.
var removeNodes = Define(Def[RemoveNodes, nns.RemoveNodesPayload, map[string]NodeFacts]{
	Name: "remove_nodes", Generates: "for nodes declared decommissioned", Since: "v0.5.0",
	Doc:     "Nested in a proposal of kind \"remove_nodes\": deregisters nodes, freeing their operators' allowance. Holds one node block per node. The registry rejects a node that is still a subnet member, so remove it from its subnet first; preflight checks this before the proposal is cut.",
	OnChain: Execute[nns.RemoveNodesPayload](nns.FunctionRemoveNodes),
	Changes: func(p nns.RemoveNodesPayload) []Change {
		var out []Change
		for _, n := range p.NodeIDs {
			out = append(out, Change{OpRemoveNode, n.String(), ""})
		}
		return out
	},
	Seed:     seedRemoveNodes,
	Generate: generateRemoveNodes,
	Labels:   func(r *RemoveNodes) []NodeRef { return r.Nodes },
})

func (r *RemoveNodes) Validate(c Checker) {
	if len(r.Nodes) == 0 {
		c.Errorf(c.Header(), "No node to remove", "proposal %q: add one node { id = … } block per node to deregister", c.Proposal())
	}
	for i, n := range r.Nodes {
		c.Principal("node.id", n.ID, c.At("node", i, "id"))
		c.Once("node", "remove_nodes", n.ID, c.At("node", i, "id"))
	}
}

func (r *RemoveNodes) IDs(visit func(*string)) { refIDs(r.Nodes, visit) }

func (r *RemoveNodes) Build(Live) (Payload[nns.RemoveNodesPayload], error) {
	nodes, err := principals("node.id", nodeIDs(r.Nodes))
	if err != nil {
		return Payload[nns.RemoveNodesPayload]{}, err
	}
	return Payload[nns.RemoveNodesPayload]{Value: nns.RemoveNodesPayload{NodeIDs: nodes}, Render: func(w io.Writer) { writeList(w, "node", nodes) }}, nil
}

// Fetch reads the nodes.
func (r *RemoveNodes) Fetch(ctx context.Context, rd Reader) (map[string]NodeFacts, error) {
	return rd.Nodes(ctx, nodeIDs(r.Nodes))
}

// Check checks that each node is registered and in no subnet.
func (r *RemoveNodes) Check(live map[string]NodeFacts, _ Options) ([]Check, bool) {
	var checks []Check
	changes := 0
	for _, n := range r.Nodes {
		f := live[n.ID]
		switch {
		case f.Err != "":
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("could not read node %s from the registry (%s); check it is registered and in no subnet", n.ID, f.Err)})
			changes++
		case !f.Registered:
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("node %s is no longer registered; removing it changes nothing", n.ID)})
		case f.MemberOf != "":
			checks = append(checks, Check{Severity: Refused, Subject: n.ID, Message: fmt.Sprintf("node %s is still a member of subnet %s; the registry rejects removing it, so take it out of the subnet with a membership proposal first", n.ID, f.MemberOf)})
			changes++
		default:
			checks = append(checks, Check{Severity: OK, Subject: n.ID, Message: fmt.Sprintf("node %s is registered and in no subnet; it will be deregistered", n.ID)})
			changes++
		}
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "no node named is still registered, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// Closes is each node deregistered.
func (r *RemoveNodes) Closes() []Change {
	var out []Change
	for _, n := range r.Nodes {
		out = append(out, Change{OpRemoveNode, n.ID, ""})
	}
	return out
}

// HCL writes the block as alp plan --generate does.
func (r *RemoveNodes) HCL(b *strings.Builder, ref func(id string) string) {
	b.WriteString("  remove_nodes {\n")
	for _, n := range r.Nodes {
		fmt.Fprintf(b, "    node {\n      id = %s\n    }\n", ref(n.ID))
	}
	b.WriteString("  }\n")
}

// Seed seeds every subnet (a node removed must be a member of none) and
// the nodes.
func seedRemoveNodes(ctx context.Context, s Seeder, pl nns.RemoveNodesPayload) error {
	if err := s.AllSubnets(ctx); err != nil {
		return err
	}
	return s.Nodes(ctx, pl.NodeIDs)
}

// Generate proposes one remove_nodes for the declared decommissioned
// nodes still registered, after the membership proposals that take them
// out of their subnets.
func generateRemoveNodes(d *Drift) ([]Generated, []string) {
	memberOf := d.memberOf()
	var nodes []ref
	var after []Change
	for _, n := range d.Fleet.Nodes {
		f, read := d.Chain.Nodes[n.ID]
		if !n.Decommissioned || !read || f.Err != "" || !f.Found || d.Pending[Change{Op: OpRemoveNode, Subject: n.ID}] {
			continue
		}
		nodes = append(nodes, d.n.node(n.ID))
		if cur := memberOf[n.ID]; cur != "" {
			after = append(after, Change{Op: OpRemove, Subject: n.ID, Target: cur})
		}
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	slices.SortFunc(nodes, func(a, b ref) int { return strings.Compare(a.ID, b.ID) })
	body := &RemoveNodes{}
	for _, n := range nodes {
		body.Nodes = append(body.Nodes, NodeRef{ID: n.ID})
	}
	p := Generated{Body: body, After: after}
	p.Name = "remove-" + countOr(nodes, "nodes")
	if len(nodes) == 1 {
		p.Name = "remove-node-" + slug(nodes[0].word())
		if strings.HasPrefix(slug(nodes[0].word()), "node") {
			p.Name = "remove-" + slug(nodes[0].word())
		}
	}
	p.Title = "Remove decommissioned nodes " + titleList(nodes)
	p.Summary = fmt.Sprintf("Remove nodes %s from the registry.\n\nMotivation: the nodes are decommissioned; removing their records frees their node operators' node allowance.\n", fullList(nodes))
	return []Generated{p}, nil
}
