package config

import (
	"sort"
	"strings"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// decodeProposals decodes the provider block and every proposal, checking
// each proposal's kind against its nested block and every id in it.
func (l *loader) decodeProposals(c *Config) {
	s := l.scope
	if s == nil {
		s = newScope()
	}
	all := map[string]bool{}
	for k := range allKinds {
		all[k] = true
	}
	ctx := s.evalContext()

	providers := l.blocks["provider"]
	for i, b := range providers {
		if i > 0 {
			l.errorf(&b.DefRange, "Duplicate provider block", "a second provider block at %s; the first is at %s; keep one", site(b.DefRange), site(providers[0].DefRange))
			continue
		}
		// A fraction is reported and decoding goes on: the decoder takes
		// it without a word, and nothing checked after it reads a number.
		// A broken reference is not decoded: the decoder would only
		// repeat it more vaguely.
		refsOK := l.checkRefs(b.Body, s, all, "provider")
		l.checkWholeNumbers(b.Body, ctx)
		if !refsOK {
			continue
		}
		p := &Provider{Range: b.DefRange}
		l.diags = append(l.diags, gohcl.DecodeBody(b.Body, ctx, p)...)
		// The agent's own rule (agent.ParseURL), so the load refuses
		// every host the agent would.
		if p.Host != "" {
			if _, err := agent.ParseURL(p.Host); err != nil {
				at := attrRange(b, "host")
				l.errorf(&at, "Invalid host", "provider.host %q is not an http(s) URL; write it as https://host[:port] (mainnet is %s)", p.Host, "https://icp-api.io")
			}
		}
		c.Provider = p
	}

	// Every proposal is checked whatever was wrong before it (the
	// provider, a name used twice, another proposal), so one load names
	// every problem; the order within a proposal is in docs/decisions.md.
	l.checkDuplicateNames("proposal")
	for _, b := range l.blocks["proposal"] {
		refsOK := l.checkRefs(b.Body, s, all, "proposal")
		l.checkWholeNumbers(b.Body, ctx)
		if !refsOK {
			continue
		}
		if nestedBody(b, "resize") != nil {
			// A v0.2.0 config: say what to do rather than "unsupported block".
			at := blockRange(b, "resize")
			l.errorf(&at, "Renamed proposal block", "proposal %q: the resize block and kind were renamed membership in v0.3.0; rename both (kind = \"membership\", membership { … })", b.Labels[0])
			continue
		}
		p := &Proposal{Name: b.Labels[0], Range: b.DefRange}
		diags := gohcl.DecodeBody(b.Body, ctx, p)
		l.diags = append(l.diags, diags...)
		if diags.HasErrors() {
			continue
		}
		l.validateProposal(p, b)
		p.Places = places(nestedBody(b, bodyBlock[p.Kind]), ctx)
		c.Proposals = append(c.Proposals, p)
	}
}

// bodyBlock names each kind's nested block.
var bodyBlock = map[Kind]string{
	KindMembership:          "membership",
	KindDeployGuestOS:       "deploy_guestos",
	KindUpdateSubnet:        "update_subnet",
	KindRemoveNodes:         "remove_nodes",
	KindRemoveNodeOperators: "remove_node_operators",
	KindRemoveNodeProvider:  "remove_node_provider",
}

func (p *Proposal) bodies() map[Kind]bool {
	return map[Kind]bool{
		KindMembership:          p.Membership != nil,
		KindDeployGuestOS:       p.DeployGuestOS != nil,
		KindUpdateSubnet:        p.UpdateSubnet != nil,
		KindRemoveNodes:         p.RemoveNodes != nil,
		KindRemoveNodeOperators: p.RemoveNodeOperators != nil,
		KindRemoveNodeProvider:  p.RemoveNodeProvider != nil,
	}
}

// validateProposal checks p's kind, its title, summary and url, and the
// body of its kind, reporting every problem. Only the body's checks wait
// on another: they need a known kind whose block is there.
func (l *loader) validateProposal(p *Proposal, b *hcl.Block) {
	kindAt := attrRange(b, "kind")
	want, known := bodyBlock[p.Kind]
	switch {
	case !known && p.Kind == "resize":
		l.errorf(&kindAt, "Renamed proposal kind", "proposal %q: kind \"resize\" was renamed \"membership\" in v0.3.0; rename the kind and its resize block to membership", p.Name)
	case !known:
		l.errorf(&kindAt, "Unknown proposal kind", "proposal %q: kind %q is not one of membership, deploy_guestos, update_subnet, remove_nodes, remove_node_operators, remove_node_provider", p.Name, p.Kind)
	default:
		present := p.bodies()
		for _, kind := range Kinds {
			if kind == p.Kind && !present[kind] {
				l.errorf(&kindAt, "Missing proposal body", "proposal %q of kind %q needs a %s { } block", p.Name, p.Kind, want)
			}
			if kind != p.Kind && present[kind] {
				at := blockRange(b, bodyBlock[kind])
				l.errorf(&at, "Block does not match the kind", "proposal %q is of kind %q, so it cannot hold a %s block; change kind or move the block to its own proposal", p.Name, p.Kind, bodyBlock[kind])
			}
		}
	}
	l.checkProposalFields(p, b)
	if !known || !p.bodies()[p.Kind] {
		return
	}
	body := blockRange(b, want)
	nb := nestedBody(b, want)
	// at is where field is written in the kind's block (the i-th child
	// block of type child when child is not empty), else the block header.
	at := func(child string, i int, field string) hcl.Range {
		if r, ok := attrIn(nb, child, i, field); ok {
			return r
		}
		return body
	}
	check := func(field, id string, where hcl.Range) {
		l.checkPrincipal(id, where, "proposal", p.Name, field)
	}
	// once refuses an id the proposal names a second time: as the same
	// field it would travel twice in the payload, as add and remove it
	// contradicts itself. Principal text compares case-insensitively.
	type named struct {
		field string
		at    hcl.Range
	}
	seen := map[string]named{}
	once := func(what, field, id string, where hcl.Range) {
		key := strings.ToLower(id)
		first, dup := seen[key]
		if !dup {
			seen[key] = named{field, where}
			return
		}
		if first.field == field {
			l.errorf(&where, "Duplicate "+what, "proposal %q names %s %s twice in %s (at %s and %s); keep one", p.Name, what, id, field, site(first.at), site(where))
			return
		}
		l.errorf(&where, "Contradictory "+what, "proposal %q names %s %s in both %s (at %s) and %s (at %s); keep the one you mean", p.Name, what, id, first.field, site(first.at), field, site(where))
	}
	switch p.Kind {
	case KindMembership:
		m := p.Membership
		check("subnet_id", m.SubnetID, at("", 0, "subnet_id"))
		for i, n := range m.Add {
			check("add.id", n.ID, at("add", i, "id"))
			once("node", "add", n.ID, at("add", i, "id"))
		}
		for i, n := range m.Remove {
			check("remove.id", n.ID, at("remove", i, "id"))
			once("node", "remove", n.ID, at("remove", i, "id"))
		}
		if len(m.Add) == 0 && len(m.Remove) == 0 {
			l.errorf(&body, "Empty membership change", "proposal %q adds and removes no node; add at least one add { } or remove { } block", p.Name)
		}
	case KindDeployGuestOS:
		check("subnet_id", p.DeployGuestOS.SubnetID, at("", 0, "subnet_id"))
		v := p.DeployGuestOS.ReplicaVersionID
		if v == "" {
			r := at("", 0, "replica_version_id")
			l.errorf(&r, "Missing replica version", "proposal %q: replica_version_id is empty; write the version hash, or guestos_version.<name>.id", p.Name)
		}
		if id, isName := l.versionNames[v]; isName {
			r := at("", 0, "replica_version_id")
			l.errorf(&r, "GuestOS version name, not id", "proposal %q: replica_version_id %q is the name of a guestos_version block (id %s), and the payload takes the id; write replica_version_id = guestos_version.%s.id", p.Name, v, id, v)
		}
	case KindUpdateSubnet:
		u := p.UpdateSubnet
		check("subnet_id", u.SubnetID, at("", 0, "subnet_id"))
		if u.SubnetAdmins != nil {
			r := at("", 0, "subnet_admins")
			for _, a := range *u.SubnetAdmins {
				check("subnet_admins", a, r)
				once("admin", "subnet_admins", a, r)
			}
			if len(*u.SubnetAdmins) > MaxSubnetAdmins {
				l.errorf(&r, "Too many admins", "proposal %q: subnet_admins lists %d principals; at most %d are allowed, so drop %d", p.Name, len(*u.SubnetAdmins), MaxSubnetAdmins, len(*u.SubnetAdmins)-MaxSubnetAdmins)
			}
		}
	case KindRemoveNodes:
		if len(p.RemoveNodes.Nodes) == 0 {
			l.errorf(&body, "No node to remove", "proposal %q: add one node { id = … } block per node to deregister", p.Name)
		}
		for i, n := range p.RemoveNodes.Nodes {
			check("node.id", n.ID, at("node", i, "id"))
			once("node", "remove_nodes", n.ID, at("node", i, "id"))
		}
	case KindRemoveNodeOperators:
		r := at("", 0, "operators")
		if len(p.RemoveNodeOperators.Operators) == 0 {
			l.errorf(&r, "No operator to remove", "proposal %q: operators is empty; list the principal of each node operator to remove", p.Name)
		}
		for _, o := range p.RemoveNodeOperators.Operators {
			check("operators", o, r)
			once("operator", "operators", o, r)
		}
	case KindRemoveNodeProvider:
		check("node_provider_id", p.RemoveNodeProvider.NodeProviderID, at("", 0, "node_provider_id"))
	}
}

// checkProposalFields refuses a title, summary or url that governance
// would refuse when the proposal is made, so list and plan fail on it too,
// not only the dry run or the submission.
func (l *loader) checkProposalFields(p *Proposal, b *hcl.Block) {
	fields := []struct {
		name, fix string
		err       error
	}{
		{"title", "write a title of 5 to 256 bytes", nns.CheckProposalTitle(p.Title)},
		{"summary", "shorten it, and link the rest from the forum thread url names", nns.CheckProposalSummary(p.Summary)},
		{"url", "link the proposal's forum thread (https://forum.dfinity.org/t/…) or leave url out", nns.CheckProposalURL(p.URL)},
	}
	for _, f := range fields {
		if f.err != nil {
			at := attrRange(b, f.name)
			l.errorf(&at, "Invalid proposal "+f.name, "proposal %q: %v; %s", p.Name, f.err, f.fix)
		}
	}
}

// places maps, in body, each attribute's path ("features.sev_enabled")
// and each string it holds (principal text canonical) to where it is
// written; the first place wins.
func places(body *hclsyntax.Body, ctx *hcl.EvalContext) map[string]hcl.Range {
	out := map[string]hcl.Range{}
	add := func(key string, at hcl.Range) {
		if _, seen := out[key]; !seen {
			out[key] = at
		}
	}
	var walk func(b *hclsyntax.Body, prefix string)
	walk = func(b *hclsyntax.Body, prefix string) {
		names := make([]string, 0, len(b.Attributes))
		for n := range b.Attributes {
			names = append(names, n)
		}
		sort.Strings(names) // one order, so "first" is the same every load
		for _, n := range names {
			a := b.Attributes[n]
			add(prefix+n, a.SrcRange)
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
				continue
			}
			vals := []cty.Value{v}
			if v.Type().IsListType() || v.Type().IsTupleType() {
				vals = v.AsValueSlice()
			}
			for _, x := range vals {
				if !x.IsNull() && x.Type() == cty.String {
					add(canonicalText(x.AsString()), a.SrcRange)
				}
			}
		}
		for _, nb := range b.Blocks {
			walk(nb.Body, prefix+nb.Type+".")
		}
	}
	if body != nil {
		walk(body, "")
	}
	return out
}

// canonicalText is s as canonicalize leaves it: principal text in its
// canonical form, anything else as written.
func canonicalText(s string) string {
	if p, err := principal.Decode(s); err == nil {
		return p.String()
	}
	return s
}

// nestedBody is the body of the first nested block typ in b, or nil.
func nestedBody(b *hcl.Block, typ string) *hclsyntax.Body {
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		for _, nb := range sb.Blocks {
			if nb.Type == typ {
				return nb.Body
			}
		}
	}
	return nil
}

// attrIn finds attribute name in body, or with child set in the i-th nested
// block of that type.
func attrIn(body *hclsyntax.Body, child string, i int, name string) (hcl.Range, bool) {
	if body == nil {
		return hcl.Range{}, false
	}
	if child != "" {
		n := 0
		var found *hclsyntax.Body
		for _, nb := range body.Blocks {
			if nb.Type != child {
				continue
			}
			if n == i {
				found = nb.Body
				break
			}
			n++
		}
		if found == nil {
			return hcl.Range{}, false
		}
		body = found
	}
	if a, ok := body.Attributes[name]; ok {
		return a.SrcRange, true
	}
	return hcl.Range{}, false
}

// attrRange is the range of attribute name in b, or b's header.
func attrRange(b *hcl.Block, name string) hcl.Range {
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		if a, ok := sb.Attributes[name]; ok {
			return a.SrcRange
		}
	}
	return b.DefRange
}

// blockRange is the header range of the first nested block typ in b, or b's.
func blockRange(b *hcl.Block, typ string) hcl.Range {
	if sb, ok := b.Body.(*hclsyntax.Body); ok {
		for _, nb := range sb.Blocks {
			if nb.Type == typ {
				return nb.DefRange()
			}
		}
	}
	return b.DefRange
}

// checkWholeNumbers reports every number in body (and its nested blocks)
// that is not a whole number. Every number of the schema is a uint64 (a
// neuron id, a count, a size), and the HCL decoder truncates some
// fractions silently (neuron = 1.5 became neuron 1), which for a neuron id
// would propose from another neuron.
func (l *loader) checkWholeNumbers(body hcl.Body, ctx *hcl.EvalContext) {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return
	}
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, a := range b.Attributes {
			v, diags := a.Expr.Value(ctx)
			if diags.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.Number {
				continue // the decoder reports what is wrong with it
			}
			if !v.AsBigFloat().IsInt() {
				at := a.Expr.Range()
				l.errorf(&at, "Not a whole number", "%s = %s: every number here is a whole number (an id, a count or a size)", a.Name, v.AsBigFloat().Text('g', -1))
			}
		}
		for _, nb := range b.Blocks {
			walk(nb.Body)
		}
	}
	walk(sb)
}
