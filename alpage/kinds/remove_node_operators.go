package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// RemoveNodeOperators is a "remove_node_operators" proposal's block:
// delete operator records.
type RemoveNodeOperators struct {
	Operators []string `hcl:"operators" since:"v0.5.0" doc:"Ids of the node operators whose records to delete (node_operator.<name>.id)."`
}

// removeNodeOperators is the kind: remove_node_operators.
var removeNodeOperators = Define(Def[RemoveNodeOperators, nns.RemoveNodeOperatorsPayload, map[string]OperatorFacts]{
	Name: "remove_node_operators", Generates: "for node operators declared decommissioned", Since: "v0.5.0",
	Doc:      "Nested in a proposal of kind \"remove_node_operators\": deletes node operator records. The registry silently skips an operator that still owns nodes, so deregister its nodes first; preflight checks this.",
	OnChain:  Execute[nns.RemoveNodeOperatorsPayload](nns.FunctionRemoveNodeOperators),
	Changes:  removeOperatorsChanges,
	Seed:     seedRemoveNodeOperators,
	Generate: generateRemoveNodeOperators,
	Effects:  removeOperatorsEffects,
})

func (r *RemoveNodeOperators) Validate(c Checker) {
	at := c.At("", 0, "operators")
	if len(r.Operators) == 0 {
		c.Errorf(at, "No operator to remove", "proposal %q: operators is empty; list the principal of each node operator to remove", c.Proposal())
	}
	for _, o := range r.Operators {
		c.Principal("operators", o, at)
		c.Once("operator", "operators", o, at)
	}
}

func (r *RemoveNodeOperators) IDs(visit func(*string)) {
	for i := range r.Operators {
		visit(&r.Operators[i])
	}
}

// Build names the operators by principal
// (node_operator_principals_to_remove); the older byte-string list stays
// empty.
func (r *RemoveNodeOperators) Build(Live) (Payload[nns.RemoveNodeOperatorsPayload], error) {
	ops, err := principals("operators", r.Operators)
	if err != nil {
		return Payload[nns.RemoveNodeOperatorsPayload]{}, err
	}
	return Payload[nns.RemoveNodeOperatorsPayload]{
		Value: nns.RemoveNodeOperatorsPayload{
			NodeOperatorsToRemove:          [][]byte{},
			NodeOperatorPrincipalsToRemove: &nns.NodeOperatorPrincipals{Principals: ops},
		},
		Render: func(w io.Writer) { writeList(w, "operator", ops) },
	}, nil
}

// Fetch reads each operator's record and nodes.
func (r *RemoveNodeOperators) Fetch(ctx context.Context, rd Reader) (map[string]OperatorFacts, error) {
	return rd.Operators(ctx, r.Operators), nil
}

// Check checks that each operator has a record and owns no node.
func (r *RemoveNodeOperators) Check(live map[string]OperatorFacts, _ Options) ([]Check, bool) {
	var checks []Check
	changes := 0
	for _, op := range r.Operators {
		f := live[op]
		switch {
		case f.RegisteredErr != "":
			// Whether it owns nodes is the explorer's to say: asked below.
			checks = append(checks, Check{Severity: Warning, Subject: op, Message: fmt.Sprintf("could not read operator %s from the registry (%s); check it has a record", op, f.RegisteredErr)})
		case !f.Registered:
			checks = append(checks, Check{Severity: Warning, Subject: op, Message: fmt.Sprintf("operator %s has no registry record; removing it changes nothing", op)})
			continue
		}
		changes++
		switch {
		case f.NodesErr != "":
			checks = append(checks, Check{Severity: Warning, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("could not list the nodes of operator %s (%s); the registry silently skips an operator that still owns nodes", op, f.NodesErr)})
		case len(f.Nodes) > 0:
			checks = append(checks, Check{Severity: Flagged, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("operator %s still owns %d node(s) (%s); the registry silently skips it, so deregister them first", op, len(f.Nodes), shortList(f.Nodes))})
		default:
			checks = append(checks, Check{Severity: OK, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("operator %s owns no nodes; its record will be deleted", op)})
		}
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "no operator named has a record, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// Closes is each operator's record deleted.
func (r *RemoveNodeOperators) Closes() []Change {
	var out []Change
	for _, o := range r.Operators {
		out = append(out, Change{OpRemoveOperator, o, ""})
	}
	return out
}

func removeOperatorsChanges(p nns.RemoveNodeOperatorsPayload) []Change {
	ops := texts(operatorsOf(p))
	slices.Sort(ops)
	var out []Change
	for _, o := range slices.Compact(ops) {
		out = append(out, Change{OpRemoveOperator, o, ""})
	}
	return out
}

// operatorsOf is every operator a payload names, in either of its lists.
func operatorsOf(pl nns.RemoveNodeOperatorsPayload) []principal.Principal {
	var ops []principal.Principal
	for _, raw := range pl.NodeOperatorsToRemove {
		if op, err := principal.FromBytes(raw); err == nil {
			ops = append(ops, op)
		}
	}
	if pl.NodeOperatorPrincipalsToRemove != nil {
		ops = append(ops, pl.NodeOperatorPrincipalsToRemove.Principals...)
	}
	return ops
}

// HCL writes the block as alp plan --generate does.
func (r *RemoveNodeOperators) HCL(b *strings.Builder, ref func(id string) string) {
	var os []string
	for _, o := range r.Operators {
		os = append(os, ref(o))
	}
	fmt.Fprintf(b, "  remove_node_operators {\n    operators = [%s]\n  }\n", strings.Join(os, ", "))
}

// Seed seeds the operators' records and the nodes they own.
func seedRemoveNodeOperators(ctx context.Context, s Seeder, pl nns.RemoveNodeOperatorsPayload) error {
	ops := operatorsOf(pl)
	var keys []string
	for _, op := range ops {
		keys = append(keys, nns.NodeOperatorRecordKey(op.String()))
	}
	if err := s.Records(ctx, keys...); err != nil {
		return err
	}
	return s.OperatorNodes(ctx, ops)
}

// Effects warns of each operator the registry skipped: it removes no
// operator that still owns nodes, and does not fail for it.
func removeOperatorsEffects(pl nns.RemoveNodeOperatorsPayload, reg LocalRegistry) []string {
	var out []string
	for _, op := range operatorsOf(pl) {
		if _, ok, _ := reg.NodeOperator(op); ok {
			nodes, _ := reg.NodesOfOperator(op)
			out = append(out, fmt.Sprintf("the registry skips node operator %s: it still owns %d node(s)", op, len(nodes)))
		}
	}
	return out
}

// Generate proposes one remove_node_operators for the declared
// decommissioned operators that will own no node once the declared
// decommissioned nodes are removed, after the remove_nodes that removes
// them; an operator that keeps nodes is a note.
func generateRemoveNodeOperators(d *Drift) ([]Generated, []string) {
	var ops []ref
	var after []Change
	var notes []string
	for _, o := range operatorsGone(d) {
		after = append(after, o.after...)
		switch {
		case o.note != "":
			notes = append(notes, o.note)
		case o.propose:
			ops = append(ops, d.n.operator(o.id))
		}
	}
	if len(ops) == 0 {
		return nil, notes
	}
	body := &RemoveNodeOperators{}
	for _, o := range ops {
		body.Operators = append(body.Operators, o.ID)
	}
	p := Generated{Body: body, After: after}
	p.Name = "remove-" + countOr(ops, "node-operators")
	if len(ops) == 1 {
		p.Name = "remove-operator-" + slug(ops[0].word())
	}
	p.Title = "Remove node operators " + titleList(ops)
	p.Summary = fmt.Sprintf("Remove the records of node operators %s from the registry.\n\nMotivation: the node operators are decommissioned and own no nodes.\n", fullList(ops))
	return []Generated{p}, notes
}

// operatorGone is what becomes of one declared decommissioned operator
// whose record was read: gone once the generated proposals execute (or
// already), proposed for removal, or a note saying why not; after is the
// node removals it waits on.
type operatorGone struct {
	id            string
	gone, propose bool
	note          string
	after         []Change
}

// operatorsGone is the fate of each declared decommissioned operator, in
// declaration order (remove_node_provider reads which are gone).
func operatorsGone(d *Drift) []operatorGone {
	gone := map[string]bool{} // node ids no longer registered once the generated remove_nodes execute
	for _, n := range d.Fleet.Nodes {
		if f, read := d.Chain.Nodes[n.ID]; n.Decommissioned && read && f.Err == "" {
			gone[n.ID] = true
		}
	}
	var out []operatorGone
	for _, o := range d.Fleet.Operators {
		f, read := d.Chain.Operators[o.ID]
		switch {
		case !o.Decommissioned || !read || f.Err != "":
			continue
		case !f.Found || d.Pending[Change{Op: OpRemoveOperator, Subject: o.ID}]:
			out = append(out, operatorGone{id: o.ID, gone: true})
			continue
		case !f.NodesListed || f.NodesErr != "":
			out = append(out, operatorGone{id: o.ID, note: fmt.Sprintf("node operator %s is declared decommissioned, but the nodes it owns could not be listed; no remove_node_operators is generated for it", o.Name)})
			continue
		}
		og := operatorGone{id: o.ID}
		var left []string
		for _, n := range f.Nodes {
			if !gone[n] {
				left = append(left, n)
			} else {
				og.after = append(og.after, Change{Op: OpRemoveNode, Subject: n})
			}
		}
		if len(left) > 0 {
			og.note = fmt.Sprintf("node operator %s is declared decommissioned but still owns nodes %s that are not; the registry would skip it, so no remove_node_operators is generated for it", o.Name, "["+strings.Join(left, ", ")+"]")
		} else {
			og.gone, og.propose = true, true
		}
		out = append(out, og)
	}
	return out
}
