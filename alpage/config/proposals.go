package config

import (
	"fmt"
	"sort"
	"strings"

	"alpnib.dev/alpage/kinds"
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
			l.errorf(&b.DefRange, "Duplicate provider block", "a second provider block at %s; the first is at %s; keep one", Site(b.DefRange), Site(providers[0].DefRange))
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
		p, ok := l.decodeProposal(b, ctx)
		if !ok {
			continue
		}
		l.validateProposal(p, b)
		if k := kinds.Of(string(p.Kind)); k != nil {
			p.Places = places(nestedBody(b, k.Name()), ctx)
		}
		c.Proposals = append(c.Proposals, p)
	}
}

// proposalHead is what a proposal block holds besides its kind's block.
type proposalHead struct {
	Name    string   `hcl:"name,label"`
	Kind    Kind     `hcl:"kind"`
	Title   string   `hcl:"title"`
	Summary string   `hcl:"summary,optional"`
	URL     string   `hcl:"url,optional"`
	Rest    hcl.Body `hcl:",remain"`
}

// decodeProposal decodes b: its common fields, then each nested block of
// a kind into that kind's type. ok is false when decoding failed (the
// diagnostics say why). Bodies holds every kind block found, by kind, for
// validateProposal to match against the kind.
func (l *loader) decodeProposal(b *hcl.Block, ctx *hcl.EvalContext) (*Proposal, bool) {
	var head proposalHead
	// The common fields; the rest of the block is head.Rest.
	diags := gohcl.DecodeBody(b.Body, ctx, &head)
	// The whole block against the whole schema, so an unknown argument or
	// block is told with the names it may have meant; the common fields'
	// own problems (a missing title) were told by the decode above.
	schema, _ := gohcl.ImpliedBodySchema(&head)
	for i := range schema.Attributes {
		schema.Attributes[i].Required = false
	}
	for _, k := range kinds.All {
		schema.Blocks = append(schema.Blocks, hcl.BlockHeaderSchema{Type: k.Name()})
	}
	content, more := b.Body.Content(schema)
	diags = append(diags, more...)
	bodies := map[Kind]kinds.Body{}
	first := map[string]*hcl.Block{}
	for _, nb := range content.Blocks {
		if prev, dup := first[nb.Type]; dup {
			// gohcl's words for a second block of a kind, as when the
			// blocks were fields of the proposal.
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Duplicate %s block", nb.Type),
				Detail: fmt.Sprintf("Only one %s block is allowed. Another was defined at %s.", nb.Type, prev.DefRange.String()), Subject: &nb.DefRange})
			continue
		}
		first[nb.Type] = nb
		body := kinds.Of(nb.Type).New()
		diags = append(diags, gohcl.DecodeBody(nb.Body, ctx, body)...)
		bodies[Kind(nb.Type)] = body
	}
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() {
		return nil, false
	}
	p := &Proposal{Name: b.Labels[0], Kind: head.Kind, Title: head.Title, Summary: head.Summary, URL: head.URL, Range: b.DefRange, bodies: bodies}
	p.Body = bodies[p.Kind]
	return p, true
}

// validateProposal checks p's kind, its title, summary and url, and the
// block of its kind, reporting every problem. Only the block's checks wait
// on another: they need a known kind whose block is there.
func (l *loader) validateProposal(p *Proposal, b *hcl.Block) {
	kindAt := attrRange(b, "kind")
	k := kinds.Of(string(p.Kind))
	switch {
	case k == nil && p.Kind == "resize":
		l.errorf(&kindAt, "Renamed proposal kind", "proposal %q: kind \"resize\" was renamed \"membership\" in v0.3.0; rename the kind and its resize block to membership", p.Name)
	case k == nil:
		l.errorf(&kindAt, "Unknown proposal kind", "proposal %q: kind %q is not one of %s", p.Name, p.Kind, strings.Join(kinds.Names(), ", "))
	default:
		for _, other := range kinds.All {
			name := Kind(other.Name())
			_, present := p.bodies[name]
			if name == p.Kind && !present {
				l.errorf(&kindAt, "Missing proposal body", "proposal %q of kind %q needs a %s { } block", p.Name, p.Kind, name)
			}
			if name != p.Kind && present {
				at := blockRange(b, string(name))
				l.errorf(&at, "Block does not match the kind", "proposal %q is of kind %q, so it cannot hold a %s block; change kind or move the block to its own proposal", p.Name, p.Kind, name)
			}
		}
	}
	l.checkProposalFields(p, b)
	if p.Body == nil {
		return
	}
	p.Body.Validate(&blockChecker{l: l, p: p, header: blockRange(b, k.Name()), body: nestedBody(b, k.Name()), seen: map[string]named{}})
}

// blockChecker is the kinds.Checker of one proposal's kind block.
type blockChecker struct {
	l      *loader
	p      *Proposal
	header hcl.Range
	body   *hclsyntax.Body
	// seen is each id named so far (lower case: principal text compares
	// case-insensitively), for Once.
	seen map[string]named
}

type named struct {
	field string
	at    hcl.Range
}

func (c *blockChecker) Proposal() string  { return c.p.Name }
func (c *blockChecker) Header() hcl.Range { return c.header }

func (c *blockChecker) At(child string, i int, field string) hcl.Range {
	if r, ok := attrIn(c.body, child, i, field); ok {
		return r
	}
	return c.header
}

func (c *blockChecker) Principal(field, id string, where hcl.Range) {
	c.l.checkPrincipal(id, where, "proposal", c.p.Name, field)
}

func (c *blockChecker) Once(what, field, id string, where hcl.Range) {
	key := strings.ToLower(id)
	first, dup := c.seen[key]
	if !dup {
		c.seen[key] = named{field, where}
		return
	}
	if first.field == field {
		c.l.errorf(&where, "Duplicate "+what, "proposal %q names %s %s twice in %s (at %s and %s); keep one", c.p.Name, what, id, field, Site(first.at), Site(where))
		return
	}
	c.l.errorf(&where, "Contradictory "+what, "proposal %q names %s %s in both %s (at %s) and %s (at %s); keep the one you mean", c.p.Name, what, id, first.field, Site(first.at), field, Site(where))
}

func (c *blockChecker) Errorf(where hcl.Range, summary, format string, args ...any) {
	c.l.errorf(&where, summary, format, args...)
}

func (c *blockChecker) VersionID(v string) (string, bool) {
	id, ok := c.l.versionNames[v]
	return id, ok
}

func (c *blockChecker) HostOSVersionID(v string) (string, bool) {
	id, ok := c.l.hostOSNames[v]
	return id, ok
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
