package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Resource kinds as they appear in references (<kind>.<name>.id).
const (
	kindSubnet         = "subnet"
	kindDataCenter     = "data_center"
	kindNodeProvider   = "node_provider"
	kindNodeOperator   = "node_operator"
	kindGuestOSVersion = "guestos_version"
	kindHostOSVersion  = "hostos_version"
	kindNode           = "node"
)

// tiers is the order references resolve in: a block may refer only to kinds
// of earlier tiers (proposals, decoded last, may refer to every kind).
var tiers = [][]string{
	{kindSubnet, kindDataCenter, kindNodeProvider, kindGuestOSVersion, kindHostOSVersion},
	{kindNodeOperator},
	{kindNode},
}

// scope is what references can see: per kind, per name, {id, label}.
type scope struct {
	kinds map[string]map[string]ref
}

type ref struct {
	id, label string
	at        hcl.Range
}

func newScope() *scope { return &scope{kinds: map[string]map[string]ref{}} }

func (s *scope) add(kind, name, id, label string, at hcl.Range) {
	if s.kinds[kind] == nil {
		s.kinds[kind] = map[string]ref{}
	}
	s.kinds[kind][name] = ref{id: id, label: label, at: at}
}

func (s *scope) evalContext() *hcl.EvalContext {
	vars := map[string]cty.Value{}
	for kind, names := range s.kinds {
		objs := map[string]cty.Value{}
		for name, r := range names {
			objs[name] = cty.ObjectVal(map[string]cty.Value{
				"id":    cty.StringVal(r.id),
				"label": cty.StringVal(r.label),
			})
		}
		vars[kind] = cty.ObjectVal(objs)
	}
	return &hcl.EvalContext{Variables: vars}
}

func (s *scope) names(kind string) []string {
	var out []string
	for n := range s.kinds[kind] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var allKinds = map[string]bool{
	kindSubnet: true, kindDataCenter: true, kindNodeProvider: true,
	kindNodeOperator: true, kindGuestOSVersion: true, kindHostOSVersion: true, kindNode: true,
}

// checkRefs walks every expression in body and reports references that are
// not of the <kind>.<name>.id|label form, name a kind this block may not
// refer to, or name a block that is not declared. It returns false when it
// reported anything, so decoding does not add HCL's vaguer errors on top.
func (l *loader) checkRefs(body hcl.Body, s *scope, allowed map[string]bool, what string) bool {
	ok := true
	for _, tr := range expressionTraversals(body) {
		root := tr.RootName()
		rng := tr.SourceRange()
		if !allKinds[root] {
			l.errorf(&rng, "Unknown reference", "%q is not a resource kind; references look like <kind>.<name>.id with kind one of subnet, data_center, node_provider, node_operator, guestos_version, hostos_version, node", root)
			ok = false
			continue
		}
		if !allowed[root] {
			l.errorf(&rng, "Reference not allowed here", "a %s cannot refer to a %s: references resolve in tiers (subnet, data_center, node_provider, guestos_version, hostos_version → node_operator → node → proposals); write the id itself instead", what, root)
			ok = false
			continue
		}
		if len(tr) < 3 {
			l.errorf(&rng, "Incomplete reference", "write %s.<name>.id or %s.<name>.label", root, root)
			ok = false
			continue
		}
		name, okName := traverserName(tr[1])
		attr, okAttr := traverserName(tr[2])
		if !okName || !okAttr || len(tr) > 3 {
			l.errorf(&rng, "Malformed reference", "write %s.<name>.id or %s.<name>.label", root, root)
			ok = false
			continue
		}
		if _, declared := s.kinds[root][name]; !declared {
			known := s.names(root)
			hint := fmt.Sprintf("no %s block is declared; declare %s %q in resources.hcl", root, root, name)
			if len(known) > 0 {
				hint = root + " declared: " + strings.Join(known, ", ")
			}
			l.errorf(&rng, "Reference to an undeclared block", "%s.%s is not declared (%s)", root, name, hint)
			ok = false
			continue
		}
		if attr != "id" && attr != "label" {
			l.errorf(&rng, "Unknown attribute in reference", "%s.%s.%s: only .id and .label can be referenced", root, name, attr)
			ok = false
		}
	}
	return ok
}

func traverserName(t hcl.Traverser) (string, bool) {
	switch t := t.(type) {
	case hcl.TraverseAttr:
		return t.Name, true
	case hcl.TraverseIndex:
		if t.Key.Type() == cty.String {
			return t.Key.AsString(), true
		}
	}
	return "", false
}

// expressionTraversals returns the variable references of every attribute
// in body and its nested blocks.
func expressionTraversals(body hcl.Body) []hcl.Traversal {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return nil
	}
	var out []hcl.Traversal
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		names := make([]string, 0, len(b.Attributes))
		for n := range b.Attributes {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			out = append(out, b.Attributes[n].Expr.Variables()...)
		}
		for _, nb := range b.Blocks {
			walk(nb.Body)
		}
	}
	walk(sb)
	return out
}

// decodeResources decodes every resource block tier by tier, so each tier's
// references resolve against the tiers before it.
func (l *loader) decodeResources(r *Resources) {
	s := newScope()
	allowed := map[string]bool{}
	for _, tier := range tiers {
		for _, kind := range tier {
			l.checkDuplicateNames(kind)
		}
		if l.diags.HasErrors() {
			return
		}
		ctx := s.evalContext()
		for _, kind := range tier {
			for _, b := range l.blocks[kind] {
				if !l.checkRefs(b.Body, s, allowed, kind) {
					continue
				}
				l.decodeResource(r, kind, b, ctx)
			}
		}
		if l.diags.HasErrors() {
			return
		}
		// Later tiers see this tier's blocks.
		for _, kind := range tier {
			for name, id := range r.ids(kind) {
				s.add(kind, name, id.id, id.label, id.at)
			}
			allowed[kind] = true
		}
	}
	l.scope = s
}

func (l *loader) decodeResource(r *Resources, kind string, b *hcl.Block, ctx *hcl.EvalContext) {
	name := b.Labels[0]
	l.defs[b.DefRange] = b
	var diags hcl.Diagnostics
	switch kind {
	case kindSubnet:
		v := &Subnet{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.Subnets = append(r.Subnets, v)
	case kindDataCenter:
		v := &DataCenter{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.DataCenters = append(r.DataCenters, v)
	case kindNodeProvider:
		v := &NodeProvider{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.NodeProviders = append(r.NodeProviders, v)
	case kindNodeOperator:
		v := &NodeOperator{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.NodeOperators = append(r.NodeOperators, v)
	case kindGuestOSVersion:
		v := &GuestOSVersion{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.GuestOSVersions = append(r.GuestOSVersions, v)
	case kindHostOSVersion:
		v := &HostOSVersion{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.HostOSVersions = append(r.HostOSVersions, v)
	case kindNode:
		v := &Node{Name: name, Range: b.DefRange}
		diags = gohcl.DecodeBody(b.Body, ctx, v)
		r.Nodes = append(r.Nodes, v)
	}
	l.diags = append(l.diags, diags...)
}

// ids returns, per name, the id, label and place of every block of kind.
func (r *Resources) ids(kind string) map[string]ref {
	out := map[string]ref{}
	switch kind {
	case kindSubnet:
		for _, v := range r.Subnets {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindDataCenter:
		for _, v := range r.DataCenters {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindNodeProvider:
		for _, v := range r.NodeProviders {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindNodeOperator:
		for _, v := range r.NodeOperators {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindGuestOSVersion:
		for _, v := range r.GuestOSVersions {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindHostOSVersion:
		for _, v := range r.HostOSVersions {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	case kindNode:
		for _, v := range r.Nodes {
			out[v.Name] = ref{v.ID, v.Label, v.Range}
		}
	}
	return out
}

// checkDuplicateNames reports two blocks of one kind with the same name,
// naming both places.
func (l *loader) checkDuplicateNames(kind string) {
	first := map[string]*hcl.Block{}
	for _, b := range l.blocks[kind] {
		name := b.Labels[0]
		if prev, dup := first[name]; dup {
			l.errorf(&b.LabelRanges[0], fmt.Sprintf("Duplicate %s name", kind),
				"%s %q is declared twice: at %s and at %s; rename one of them", kind, name, Site(prev.DefRange), Site(b.DefRange))
			continue
		}
		first[name] = b
	}
}
