package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
)

// AddNodeOperator is an "add_node_operator" proposal's block:
// add_node_operator (NNS_FUNCTION_ASSIGN_NOID).
type AddNodeOperator struct {
	NodeOperatorID     string             `hcl:"node_operator_id" since:"v0.6.0" doc:"Principal of the node operator to add (node_operator.<name>.id). The registry refuses an operator that has a record already."`
	NodeProviderID     string             `hcl:"node_provider_id" since:"v0.6.0" doc:"Principal of its node provider (node_provider.<name>.id). Governance refuses the proposal when it does not know the provider."`
	DcID               string             `hcl:"dc_id" since:"v0.6.0" doc:"Id of the data center the operator hosts nodes in (data_center.<name>.id); sent lower-cased, as ic-admin sends it."`
	NodeAllowance      uint64             `hcl:"node_allowance,optional" since:"v0.6.0" doc:"How many nodes the operator may still add. Omitted sends 0."`
	RewardableNodes    map[string]uint32  `hcl:"rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the number of nodes of that type the provider is rewarded for (e.g. { \"type3.1\" = 4 })."`
	MaxRewardableNodes *map[string]uint32 `hcl:"max_rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the most nodes of that type the operator can be rewarded for. Omitted sends none."`
	IPv6               *string            `hcl:"ipv6,optional" since:"v0.6.0" doc:"The operator's IPv6 address, eight groups of hexadecimal digits (the registry's format)."`
}

// OpAddOperator is the change an add_node_operator makes: operator
// Subject has a record.
const OpAddOperator Op = "add_operator"

// addNodeOperator is the kind: add_node_operator.
var addNodeOperator = Define(Def[AddNodeOperator, nns.AddNodeOperatorPayload, AddNodeOperatorFacts]{
	Name: "add_node_operator", Generates: "for a declared node operator the registry has no record of", Since: "v0.6.0",
	Doc:     "Nested in a proposal of kind \"add_node_operator\": add_node_operator (NNS function ASSIGN_NOID), a new node operator record under a node provider, as ic-admin's propose-to-add-node-operator makes it. Governance refuses a provider it does not know and the registry an operator it has; preflight checks both.",
	OnChain: Execute[nns.AddNodeOperatorPayload](nns.FunctionAssignNoid),
	Changes: func(p nns.AddNodeOperatorPayload) []Change {
		if p.NodeOperatorPrincipalID == nil {
			return nil
		}
		return []Change{{Op: OpAddOperator, Subject: p.NodeOperatorPrincipalID.String()}}
	},
	Seed: func(ctx context.Context, s Seeder, p nns.AddNodeOperatorPayload) error {
		// governance refuses a provider it does not list, the registry an
		// operator it has a record of
		if err := s.Providers(ctx); err != nil {
			return err
		}
		if p.NodeOperatorPrincipalID == nil {
			return nil
		}
		return s.Records(ctx, nns.NodeOperatorRecordKey(p.NodeOperatorPrincipalID.String()))
	},
	Generate: generateAddNodeOperator,
})

// AddNodeOperatorFacts is what an add_node_operator's preflight reads.
type AddNodeOperatorFacts struct {
	Operator OperatorFacts
	Provider ProviderFacts
	// DataCenter says whether the data center has a record.
	DataCenter    bool
	DataCenterErr string
}

func (a *AddNodeOperator) Validate(c Checker) {
	c.Principal("node_operator_id", a.NodeOperatorID, c.At("", 0, "node_operator_id"))
	c.Principal("node_provider_id", a.NodeProviderID, c.At("", 0, "node_provider_id"))
	if a.NodeOperatorID != "" && a.NodeOperatorID == a.NodeProviderID {
		c.Errorf(c.At("", 0, "node_provider_id"), "Operator is its own provider", "proposal %q: node_provider_id is the operator's own id; an operator's provider is another principal", c.Proposal())
	}
	if a.DcID == "" {
		c.Errorf(c.At("", 0, "dc_id"), "Missing data center", "proposal %q: dc_id is empty; write the id of the data center the operator hosts nodes in", c.Proposal())
	}
	if a.IPv6 != nil && !nns.IPv6FormatOK(*a.IPv6) {
		c.Errorf(c.At("", 0, "ipv6"), "IPv6 address not in the registry's format", "proposal %q: ipv6 %q is not eight colon-separated groups of hexadecimal digits; the registry takes no :: shorthand, so write every group", c.Proposal(), *a.IPv6)
	}
}

func (a *AddNodeOperator) IDs(visit func(*string)) {
	visit(&a.NodeOperatorID)
	visit(&a.NodeProviderID)
}

// Build makes the payload ic-admin's propose-to-add-node-operator makes of
// the same values: dc_id lower-cased, the maps in key order.
func (a *AddNodeOperator) Build(Live) (Payload[nns.AddNodeOperatorPayload], error) {
	op, err := onePrincipal("node_operator_id", a.NodeOperatorID)
	if err != nil {
		return Payload[nns.AddNodeOperatorPayload]{}, err
	}
	np, err := onePrincipal("node_provider_id", a.NodeProviderID)
	if err != nil {
		return Payload[nns.AddNodeOperatorPayload]{}, err
	}
	p := nns.AddNodeOperatorPayload{
		NodeOperatorPrincipalID: &op, NodeProviderPrincipalID: &np,
		NodeAllowance: a.NodeAllowance, DcID: strings.ToLower(a.DcID),
		RewardableNodes: nns.NodeTypeCounts(a.RewardableNodes), IPv6: a.IPv6,
	}
	if a.MaxRewardableNodes != nil {
		m := nns.NodeTypeCounts(*a.MaxRewardableNodes)
		p.MaxRewardableNodes = &m
	}
	return Payload[nns.AddNodeOperatorPayload]{
		Value: p,
		Render: func(w io.Writer) {
			fmt.Fprintf(w, "  operator: %s\n", op)
			fmt.Fprintf(w, "  provider: %s\n", np)
			fmt.Fprintf(w, "  dc:       %s\n", p.DcID)
			fmt.Fprintf(w, "  allowance: %d\n", p.NodeAllowance)
			if len(p.RewardableNodes) > 0 {
				fmt.Fprintf(w, "  rewardable: %s\n", countsText(a.RewardableNodes))
			}
			if a.MaxRewardableNodes != nil {
				fmt.Fprintf(w, "  max rewardable: %s\n", countsText(*a.MaxRewardableNodes))
			}
			if p.IPv6 != nil {
				fmt.Fprintf(w, "  ipv6:     %s\n", *p.IPv6)
			}
		},
	}, nil
}

// Fetch reads the operator's record, what governance knows of the
// provider, and whether the data center has a record.
func (a *AddNodeOperator) Fetch(ctx context.Context, r Reader) (f AddNodeOperatorFacts, err error) {
	f.Operator = r.Operators(ctx, []string{a.NodeOperatorID})[a.NodeOperatorID]
	if f.Provider, err = r.Provider(ctx, a.NodeProviderID); err != nil {
		return f, err
	}
	if _, f.DataCenter, err = r.Record(ctx, nns.DataCenterRecordKey(strings.ToLower(a.DcID))); err != nil {
		f.DataCenterErr, err = err.Error(), nil
	}
	return f, nil
}

// Check refuses an operator the registry has a record of (its insert
// fails) and a provider governance does not know (it refuses the proposal,
// "The node provider specified in the payload is not registered"), and
// flags a data center with no record.
func (a *AddNodeOperator) Check(f AddNodeOperatorFacts, _ Options) ([]Check, bool) {
	op, np := a.NodeOperatorID, a.NodeProviderID
	var checks []Check
	switch {
	case f.Operator.RegisteredErr != "":
		checks = append(checks, Check{Severity: Warning, Subject: op, Message: fmt.Sprintf("could not read operator %s from the registry (%s); check it has no record, or the registry refuses to add it", op, f.Operator.RegisteredErr)})
	case f.Operator.Registered:
		checks = append(checks, Check{Severity: Refused, Subject: op, Message: fmt.Sprintf("node operator %s has a record already; the registry refuses to add it again, so change it with update_node_operator_config", op)})
	default:
		checks = append(checks, Check{Severity: OK, Subject: op, Message: fmt.Sprintf("node operator %s has no record; it is added", op)})
	}
	if f.Provider.Known {
		checks = append(checks, Check{Severity: OK, Subject: np, Message: fmt.Sprintf("governance knows node provider %s", np)})
	} else {
		checks = append(checks, Check{Severity: Refused, Subject: np, Message: fmt.Sprintf("governance does not know node provider %s and refuses the proposal (\"The node provider specified in the payload is not registered\"); add the provider first, or check node_provider_id", np)})
	}
	dc := strings.ToLower(a.DcID)
	switch {
	case f.DataCenterErr != "":
		checks = append(checks, Check{Severity: Warning, Subject: dc, Message: fmt.Sprintf("could not read data center %s (%s)", dc, f.DataCenterErr)})
	case !f.DataCenter:
		checks = append(checks, Check{Severity: Flagged, Subject: dc, Message: fmt.Sprintf("data center %s has no record; the registry adds the operator anyway, but its nodes' region and owner are read from that record, so add the data center first or check dc_id", dc)})
	}
	return checks, false
}

// Closes is the operator's record.
func (a *AddNodeOperator) Closes() []Change {
	return []Change{{Op: OpAddOperator, Subject: a.NodeOperatorID}}
}

// HCL writes the block as alp plan --generate does.
func (a *AddNodeOperator) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  add_node_operator {\n    node_operator_id = %s\n    node_provider_id = %s\n    dc_id            = %s\n", ref(a.NodeOperatorID), ref(a.NodeProviderID), ref(a.DcID))
	fmt.Fprintf(b, "    node_allowance   = %d\n", a.NodeAllowance)
	if len(a.RewardableNodes) > 0 {
		fmt.Fprintf(b, "    rewardable_nodes = %s\n", countsHCL(a.RewardableNodes))
	}
	if a.MaxRewardableNodes != nil {
		fmt.Fprintf(b, "    max_rewardable_nodes = %s\n", countsHCL(*a.MaxRewardableNodes))
	}
	if a.IPv6 != nil {
		fmt.Fprintf(b, "    ipv6             = %s\n", Quote(*a.IPv6))
	}
	b.WriteString("  }\n")
}

// generateAddNodeOperator proposes an add_node_operator for each declared
// operator, not decommissioned, whose record the registry lacks, under a
// provider and in a data center the block names.
func generateAddNodeOperator(d *Drift) (out []Generated, notes []string) {
	for _, o := range d.Fleet.Operators {
		f, read := d.Chain.Operators[o.ID]
		if o.Decommissioned || !read || f.Err != "" || f.Found || d.Pending[Change{Op: OpAddOperator, Subject: o.ID}] {
			continue
		}
		word := d.n.operator(o.ID).word()
		if o.Provider == "" || o.DC == "" {
			notes = append(notes, fmt.Sprintf("node operator %s is declared and has no record, but its block names no provider or dc; declare both to get an add_node_operator", word))
			continue
		}
		b := &AddNodeOperator{NodeOperatorID: o.ID, NodeProviderID: o.Provider, DcID: o.DC, RewardableNodes: o.RewardableNodes, IPv6: o.IPv6}
		if o.NodeAllowance != nil {
			b.NodeAllowance = *o.NodeAllowance
		}
		if o.MaxRewardableNodes != nil {
			m := o.MaxRewardableNodes
			b.MaxRewardableNodes = &m
		}
		p := Generated{Body: b, Name: "add-operator-" + slug(word)}
		p.Title = fmt.Sprintf("Add %s as a Node Operator of Node Provider: %s", Short(o.ID), Short(o.Provider))
		p.Summary = fmt.Sprintf("Add node operator %s under node provider %s, in data center %s.\n\nMotivation: the node operator is declared, and the registry has no record of it.\n", o.ID, o.Provider, o.DC)
		out = append(out, p)
	}
	return out, notes
}

// countsText is a node type map as `type1=2, type3.1=4`, in key order.
func countsText(m map[string]uint32) string {
	var parts []string
	for _, c := range nns.NodeTypeCounts(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", c.NodeType, c.Count))
	}
	return strings.Join(parts, ", ")
}

// countsHCL is a node type map as an HCL object, in key order.
func countsHCL(m map[string]uint32) string {
	var parts []string
	for _, c := range nns.NodeTypeCounts(m) {
		parts = append(parts, fmt.Sprintf("%s = %d", Quote(c.NodeType), c.Count))
	}
	if len(parts) == 0 {
		return "{}"
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// sameCounts says whether two node type maps hold the same entries.
func sameCounts(a, b map[string]uint32) bool {
	return slices.Equal(nns.NodeTypeCounts(a), nns.NodeTypeCounts(b))
}
