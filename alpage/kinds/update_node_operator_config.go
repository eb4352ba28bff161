package kinds

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// UpdateNodeOperatorConfig is an "update_node_operator_config" proposal's
// block. Only what it names changes: every other field travels as null
// (rewardable_nodes as an empty map), which the registry reads as "keep
// the record's value", so the operator keeps what the block leaves out.
type UpdateNodeOperatorConfig struct {
	NodeOperatorID     string             `hcl:"node_operator_id" since:"v0.6.0" doc:"Principal of the node operator to change (node_operator.<name>.id)."`
	NodeAllowance      *uint64            `hcl:"node_allowance,optional" since:"v0.6.0" doc:"How many nodes the operator may still add (the registry's remaining allowance, which adding a node lowers and removing one raises). Omitted keeps the record's."`
	RewardableNodes    *map[string]uint32 `hcl:"rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the number of nodes the provider is rewarded for. The registry replaces the whole map, so name every type that stays; an empty map cannot clear it (the registry ignores one). Omitted keeps the record's."`
	MaxRewardableNodes *map[string]uint32 `hcl:"max_rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the most nodes of that type the operator can be rewarded for; replaced whole like rewardable_nodes, and an empty map is likewise ignored. Omitted keeps the record's."`
	DcID               *string            `hcl:"dc_id,optional" since:"v0.6.0" doc:"Id of the operator's data center (data_center.<name>.id), sent lower-cased as ic-admin sends it. Omitted keeps the record's."`
	NodeProviderID     *string            `hcl:"node_provider_id,optional" since:"v0.6.0" doc:"Principal of the operator's new node provider; the registry refuses the operator's own id. Omitted keeps the record's."`
	IPv6               *string            `hcl:"ipv6,optional" since:"v0.6.0" doc:"The operator's IPv6 address, eight groups of hexadecimal digits (the registry refuses any other form). Omitted keeps the record's."`
}

// OpOperatorConfig is the change an update_node_operator_config makes:
// operator Subject's record has the fields Target names (configFields).
const OpOperatorConfig Op = "operator_config"

// updateNodeOperatorConfig is the kind: update_node_operator_config.
var updateNodeOperatorConfig = Define(Def[UpdateNodeOperatorConfig, nns.UpdateNodeOperatorConfigPayload, UpdateNodeOperatorConfigFacts]{
	Name: "update_node_operator_config", Generates: "for a node operator whose allowance, rewardable nodes, data center or IPv6 differ from the declared ones", Since: "v0.6.0",
	Doc:     "Nested in a proposal of kind \"update_node_operator_config\": update_node_operator_config, as ic-admin's update-node-operator-config makes it. Only the fields the block names change; the operator keeps every other one, since the payload carries it as null.",
	OnChain: Execute[nns.UpdateNodeOperatorConfigPayload](nns.FunctionUpdateNodeOperatorConfig),
	Changes: func(p nns.UpdateNodeOperatorConfigPayload) []Change {
		if p.NodeOperatorID == nil {
			return nil
		}
		return []Change{{Op: OpOperatorConfig, Subject: p.NodeOperatorID.String(), Target: strings.Join(configFields(p), "; ")}}
	},
	Seed: func(ctx context.Context, s Seeder, p nns.UpdateNodeOperatorConfigPayload) error {
		if p.NodeOperatorID == nil {
			return nil
		}
		return s.Records(ctx, nns.NodeOperatorRecordKey(p.NodeOperatorID.String()))
	},
	Generate: generateUpdateNodeOperatorConfig,
})

// UpdateNodeOperatorConfigFacts is what its preflight reads: the operator
// (record and nodes) and, when the block names one, the new provider.
type UpdateNodeOperatorConfigFacts struct {
	Operator OperatorFacts
	Provider *ProviderFacts
}

func (u *UpdateNodeOperatorConfig) Validate(c Checker) {
	c.Principal("node_operator_id", u.NodeOperatorID, c.At("", 0, "node_operator_id"))
	if u.NodeAllowance == nil && u.RewardableNodes == nil && u.MaxRewardableNodes == nil && u.DcID == nil && u.NodeProviderID == nil && u.IPv6 == nil {
		c.Errorf(c.Header(), "Nothing to change", "proposal %q: name at least one of node_allowance, rewardable_nodes, max_rewardable_nodes, dc_id, node_provider_id or ipv6", c.Proposal())
	}
	for _, m := range []struct {
		field string
		v     *map[string]uint32
	}{{"rewardable_nodes", u.RewardableNodes}, {"max_rewardable_nodes", u.MaxRewardableNodes}} {
		if m.v != nil && len(*m.v) == 0 {
			c.Errorf(c.At("", 0, m.field), "An empty map changes nothing", "proposal %q: %s is empty, and the registry keeps the record's map when it is sent an empty one; name the types (a count of 0 sets one to zero), or leave %s out", c.Proposal(), m.field, m.field)
		}
	}
	if u.NodeProviderID != nil {
		c.Principal("node_provider_id", *u.NodeProviderID, c.At("", 0, "node_provider_id"))
		if *u.NodeProviderID == u.NodeOperatorID {
			c.Errorf(c.At("", 0, "node_provider_id"), "Operator is its own provider", "proposal %q: node_provider_id is the operator's own id, which the registry refuses", c.Proposal())
		}
	}
	if u.DcID != nil && *u.DcID == "" {
		c.Errorf(c.At("", 0, "dc_id"), "Empty data center", "proposal %q: dc_id is empty; write a data center id, or leave dc_id out to keep the record's", c.Proposal())
	}
	if u.IPv6 != nil && !nns.IPv6FormatOK(*u.IPv6) {
		c.Errorf(c.At("", 0, "ipv6"), "IPv6 address not in the registry's format", "proposal %q: ipv6 %q is not eight colon-separated groups of hexadecimal digits; the registry refuses it (\"does not conform to the required format\"), so write every group", c.Proposal(), *u.IPv6)
	}
}

func (u *UpdateNodeOperatorConfig) IDs(visit func(*string)) {
	visit(&u.NodeOperatorID)
	if u.NodeProviderID != nil {
		visit(u.NodeProviderID)
	}
}

// payload is the block's payload: what it names, and null (an empty
// rewardable_nodes) for the rest.
func (u *UpdateNodeOperatorConfig) payload() (nns.UpdateNodeOperatorConfigPayload, error) {
	op, err := onePrincipal("node_operator_id", u.NodeOperatorID)
	if err != nil {
		return nns.UpdateNodeOperatorConfigPayload{}, err
	}
	p := u.settings()
	p.NodeOperatorID = &op
	if u.NodeProviderID != nil {
		np, err := onePrincipal("node_provider_id", *u.NodeProviderID)
		if err != nil {
			return nns.UpdateNodeOperatorConfigPayload{}, err
		}
		p.NodeProviderID = &np
	}
	return p, nil
}

// settings is the payload's fields that are no principal.
func (u *UpdateNodeOperatorConfig) settings() nns.UpdateNodeOperatorConfigPayload {
	p := nns.UpdateNodeOperatorConfigPayload{NodeAllowance: u.NodeAllowance, IPv6: u.IPv6, RewardableNodes: []nns.NodeTypeCount{}}
	if u.RewardableNodes != nil {
		p.RewardableNodes = nns.NodeTypeCounts(*u.RewardableNodes)
	}
	if u.MaxRewardableNodes != nil {
		m := nns.NodeTypeCounts(*u.MaxRewardableNodes)
		p.MaxRewardableNodes = &m
	}
	if u.DcID != nil {
		dc := strings.ToLower(*u.DcID)
		p.DcID = &dc
	}
	return p
}

func (u *UpdateNodeOperatorConfig) Build(Live) (Payload[nns.UpdateNodeOperatorConfigPayload], error) {
	p, err := u.payload()
	if err != nil {
		return Payload[nns.UpdateNodeOperatorConfigPayload]{}, err
	}
	return Payload[nns.UpdateNodeOperatorConfigPayload]{
		Value: p,
		Render: func(w io.Writer) {
			fmt.Fprintf(w, "  operator: %s\n", p.NodeOperatorID)
			for _, f := range configFields(p) {
				fmt.Fprintf(w, "  sets:     %s\n", f)
			}
			fmt.Fprintf(w, "  keeps:    every field not named above\n")
		},
	}, nil
}

// configFields names what p sets, one "field = value" each, in a fixed
// order.
func configFields(p nns.UpdateNodeOperatorConfigPayload) []string {
	provider := ""
	if p.NodeProviderID != nil {
		provider = p.NodeProviderID.String()
	}
	return settingsText(p, provider)
}

// settingsText is configFields with the provider as written.
func settingsText(p nns.UpdateNodeOperatorConfigPayload, provider string) []string {
	var out []string
	if p.NodeAllowance != nil {
		out = append(out, "node_allowance = "+strconv.FormatUint(*p.NodeAllowance, 10))
	}
	if len(p.RewardableNodes) > 0 {
		out = append(out, "rewardable_nodes = "+countsText(nns.CountsMap(p.RewardableNodes)))
	}
	if p.MaxRewardableNodes != nil && len(*p.MaxRewardableNodes) > 0 {
		out = append(out, "max_rewardable_nodes = "+countsText(nns.CountsMap(*p.MaxRewardableNodes)))
	}
	if p.DcID != nil {
		out = append(out, "dc_id = "+*p.DcID)
	}
	if provider != "" {
		out = append(out, "node_provider_id = "+provider)
	}
	if p.IPv6 != nil {
		out = append(out, "ipv6 = "+*p.IPv6)
	}
	if p.SetIPv6ToNone != nil && *p.SetIPv6ToNone {
		out = append(out, "ipv6 = none")
	}
	return out
}

// Fetch reads the operator and, when the block names one, the provider.
func (u *UpdateNodeOperatorConfig) Fetch(ctx context.Context, r Reader) (f UpdateNodeOperatorConfigFacts, err error) {
	f.Operator = r.Operators(ctx, []string{u.NodeOperatorID})[u.NodeOperatorID]
	if u.NodeProviderID != nil {
		np, err := r.Provider(ctx, *u.NodeProviderID)
		if err != nil {
			return f, err
		}
		f.Provider = &np
	}
	return f, nil
}

// Check refuses an operator with no record (the registry traps on it),
// diffs each named field against the record (the rest is kept, and said
// so), flags a rewardable map that drops a live type, notes an allowance
// below the nodes the operator owns, and says when nothing named differs.
func (u *UpdateNodeOperatorConfig) Check(f UpdateNodeOperatorConfigFacts, _ Options) ([]Check, bool) {
	op := u.NodeOperatorID
	switch {
	case f.Operator.RegisteredErr != "":
		return []Check{{Severity: Warning, Subject: op, Message: fmt.Sprintf("could not read operator %s from the registry (%s); check it has a record, or the registry refuses the update", op, f.Operator.RegisteredErr)}}, false
	case !f.Operator.Registered || f.Operator.Record == nil:
		return []Check{{Severity: Refused, Subject: op, Message: fmt.Sprintf("node operator %s has no record; the registry refuses to update it (\"Node Operator record with ID %s not found in the registry\"), so add it with add_node_operator first", op, op)}}, false
	}
	rec := f.Operator.Record
	var checks []Check
	changes := 0
	diff := func(field, live, declared string) {
		if live == declared {
			checks = append(checks, Check{Severity: Note, Subject: op, Field: field, Live: live, Declared: declared, Message: fmt.Sprintf("%s is already %s", field, declared)})
			return
		}
		changes++
		checks = append(checks, Check{Severity: OK, Subject: op, Field: field, Live: live, Declared: declared, Message: fmt.Sprintf("%s: %s → %s", field, live, declared)})
	}
	var kept []string
	if u.NodeAllowance != nil {
		diff("node_allowance", strconv.FormatUint(rec.NodeAllowance, 10), strconv.FormatUint(*u.NodeAllowance, 10))
		if f.Operator.NodesErr == "" && uint64(len(f.Operator.Nodes)) > *u.NodeAllowance {
			checks = append(checks, Check{Severity: Note, Subject: op, Field: "node_allowance", Message: fmt.Sprintf("node_allowance %d is below the %d node(s) operator %s already has, which the registry accepts: it counts the allowance as the nodes the operator may still add, not as its total", *u.NodeAllowance, len(f.Operator.Nodes), op)})
		}
	} else {
		kept = append(kept, "node_allowance")
	}
	counts := func(field string, d *map[string]uint32, live map[string]uint32) {
		if d == nil {
			kept = append(kept, field)
			return
		}
		diff(field, "{"+countsText(live)+"}", "{"+countsText(*d)+"}")
		var dropped []string
		for _, c := range nns.NodeTypeCounts(live) {
			if _, ok := (*d)[c.NodeType]; !ok {
				dropped = append(dropped, c.NodeType)
			}
		}
		if len(dropped) > 0 {
			checks = append(checks, Check{Severity: Flagged, Subject: op, Field: field, Message: fmt.Sprintf("%s drops node type(s) %s, which the record has; the registry replaces the whole map, so name every type that stays", field, strings.Join(dropped, ", "))})
		}
	}
	counts("rewardable_nodes", u.RewardableNodes, rec.RewardableNodes)
	if u.MaxRewardableNodes != nil {
		checks = append(checks, Check{Severity: Note, Subject: op, Field: "max_rewardable_nodes", Declared: "{" + countsText(*u.MaxRewardableNodes) + "}",
			Message: "max_rewardable_nodes is sent as declared; alp cannot read the record's (its field number is not known to alp), so it is not compared"})
		changes++
	}
	if u.DcID != nil {
		diff("dc_id", orNone(rec.DcID), strings.ToLower(*u.DcID))
	} else {
		kept = append(kept, "dc_id")
	}
	if u.NodeProviderID != nil {
		live := ""
		if p, err := principal.FromBytes(rec.NodeProviderPrincipalID); err == nil {
			live = p.String()
		}
		diff("node_provider_id", orNone(live), *u.NodeProviderID)
		if f.Provider != nil && !f.Provider.Known {
			checks = append(checks, Check{Severity: Flagged, Subject: *u.NodeProviderID, Message: fmt.Sprintf("governance does not know node provider %s; the registry moves the operator to it anyway, and its nodes earn no rewards until it is added", *u.NodeProviderID)})
		}
	} else {
		kept = append(kept, "node_provider_id")
	}
	if u.IPv6 != nil {
		live := "(none)"
		if rec.IPv6 != nil {
			live = *rec.IPv6
		}
		diff("ipv6", live, *u.IPv6)
	} else {
		kept = append(kept, "ipv6")
	}
	if len(kept) > 0 {
		checks = append(checks, Check{Severity: Note, Subject: op, Message: fmt.Sprintf("%s: not named, so the payload sends null and the operator keeps its own", strings.Join(kept, ", "))})
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "every named field already has its live value, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// Closes is the operator's record having what the block names.
func (u *UpdateNodeOperatorConfig) Closes() []Change {
	provider := ""
	if u.NodeProviderID != nil {
		provider = *u.NodeProviderID
	}
	return []Change{{Op: OpOperatorConfig, Subject: u.NodeOperatorID, Target: strings.Join(settingsText(u.settings(), provider), "; ")}}
}

// HCL writes the block as alp plan --generate does: the fields it names.
func (u *UpdateNodeOperatorConfig) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  update_node_operator_config {\n    node_operator_id = %s\n", ref(u.NodeOperatorID))
	if u.NodeAllowance != nil {
		fmt.Fprintf(b, "    node_allowance   = %d\n", *u.NodeAllowance)
	}
	if u.RewardableNodes != nil {
		fmt.Fprintf(b, "    rewardable_nodes = %s\n", countsHCL(*u.RewardableNodes))
	}
	if u.MaxRewardableNodes != nil {
		fmt.Fprintf(b, "    max_rewardable_nodes = %s\n", countsHCL(*u.MaxRewardableNodes))
	}
	if u.DcID != nil {
		fmt.Fprintf(b, "    dc_id            = %s\n", ref(*u.DcID))
	}
	if u.NodeProviderID != nil {
		fmt.Fprintf(b, "    node_provider_id = %s\n", ref(*u.NodeProviderID))
	}
	if u.IPv6 != nil {
		fmt.Fprintf(b, "    ipv6             = %s\n", Quote(*u.IPv6))
	}
	b.WriteString("  }\n")
}

// generateUpdateNodeOperatorConfig proposes, per declared operator whose
// record differs from its block in allowance, rewardable nodes, data
// center or IPv6, one update naming those fields only (the record keeps
// the rest). A declared provider that differs is a note: moving an
// operator between providers is not drift alp closes.
func generateUpdateNodeOperatorConfig(d *Drift) (out []Generated, notes []string) {
	for _, o := range d.Fleet.Operators {
		f, read := d.Chain.Operators[o.ID]
		if o.Decommissioned || !read || f.Err != "" || !f.Found {
			continue
		}
		u := &UpdateNodeOperatorConfig{NodeOperatorID: o.ID}
		var why []string
		if o.NodeAllowance != nil && *o.NodeAllowance != f.NodeAllowance {
			v := *o.NodeAllowance
			u.NodeAllowance = &v
			why = append(why, fmt.Sprintf("node_allowance is %d on-chain and declared %d", f.NodeAllowance, v))
		}
		if o.RewardableNodes != nil && !sameCounts(o.RewardableNodes, f.RewardableNodes) {
			if len(o.RewardableNodes) == 0 {
				notes = append(notes, fmt.Sprintf("node operator %s: declared with no rewardable nodes, but the registry keeps its map when sent an empty one; no proposal clears it", d.n.operator(o.ID).word()))
			} else {
				m := o.RewardableNodes
				u.RewardableNodes = &m
				why = append(why, fmt.Sprintf("rewardable_nodes is {%s} on-chain and declared {%s}", countsText(f.RewardableNodes), countsText(m)))
			}
		}
		if o.DC != "" && !strings.EqualFold(o.DC, f.DC) {
			dc := o.DC
			u.DcID = &dc
			why = append(why, fmt.Sprintf("dc_id is %s on-chain and declared %s", orNone(f.DC), dc))
		}
		if o.IPv6 != nil && (f.IPv6 == nil || *f.IPv6 != *o.IPv6) {
			ip := *o.IPv6
			u.IPv6 = &ip
			live := "(none)"
			if f.IPv6 != nil {
				live = *f.IPv6
			}
			why = append(why, fmt.Sprintf("ipv6 is %s on-chain and declared %s", live, ip))
		}
		if o.Provider != "" && f.Provider != "" && o.Provider != f.Provider {
			notes = append(notes, fmt.Sprintf("node operator %s: declared under provider %s, on-chain under %s; moving an operator between providers is no proposal --generate makes", d.n.operator(o.ID).word(), d.n.provider(o.Provider).word(), d.n.provider(f.Provider).word()))
		}
		if len(why) == 0 {
			continue
		}
		if c := u.Closes(); len(c) == 1 && d.Pending[c[0]] {
			continue
		}
		word := d.n.operator(o.ID).word()
		p := Generated{Body: u, Name: "update-operator-" + slug(word)}
		p.Title = "Update config of Node Operator: " + Short(o.ID)
		var b strings.Builder
		fmt.Fprintf(&b, "Update the configuration of node operator %s.\n\nMotivation:\n", o.ID)
		for _, w := range why {
			fmt.Fprintf(&b, "- %s.\n", w)
		}
		b.WriteString("\nEvery field not named keeps its value in the registry.\n")
		p.Summary = b.String()
		out = append(out, p)
	}
	return out, notes
}
