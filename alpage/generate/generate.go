// Package generate writes the proposals that close the drift between the
// declared fleet and the live registry: `alp plan --generate`. It is pure:
// it reads the declared resources, the live facts reconcile fetched
// (alpage/reconcile.Live), and what proposals already pending will change,
// and returns proposal blocks in the order they must execute, plus a note
// for each drift no proposal alp makes can close.
//
// Each generated proposal is one a preflight accepts once the proposals
// before it (its After list) have executed: a node leaves its old subnet
// before it joins another, leaves its subnet before it is removed, and an
// operator's nodes go before the operator, the operators before their
// provider. Drift that is already being closed — by a declared proposal
// not yet executed, or by an open proposal governance shows — is not
// generated again.
package generate

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/reconcile"
)

// Op is what one change does; Change is one thing a proposal changes
// on-chain (alpage/kinds says what each kind's proposals change).
type (
	Op     = kinds.Op
	Change = kinds.Change
)

// The changes a generated proposal makes.
const (
	OpAdd            = kinds.OpAdd
	OpRemove         = kinds.OpRemove
	OpDeploy         = kinds.OpDeploy
	OpAdmins         = kinds.OpAdmins
	OpRemoveNode     = kinds.OpRemoveNode
	OpRemoveOperator = kinds.OpRemoveOperator
	OpRemoveProvider = kinds.OpRemoveProvider
)

// Input is what Generate reads.
type Input struct {
	Res  *config.Resources
	Live *reconcile.Live
	// Pending are the changes proposals already under way will make:
	// declared proposals not yet executed, rejected or failed, and open
	// proposals governance shows by the neuron (see Pending*).
	Pending []Change
	// Taken are proposal names already used, in proposals.hcl or
	// state.json; a generated name that would clash gets a suffix.
	Taken map[string]bool
}

// Result is what Generate found.
type Result struct {
	Proposals []*Proposal
	// Notes are drift no generated proposal closes, each saying why.
	Notes []string
}

// Generate computes the proposals that close in's drift.
func Generate(in Input) Result {
	g := &gen{in: in, n: namesOf(in.Res), pending: map[Change]bool{}, taken: map[string]bool{}}
	for _, c := range in.Pending {
		g.pending[c] = true
	}
	for n := range in.Taken {
		g.taken[n] = true
	}
	g.membership()
	g.deploys()
	g.admins()
	g.removals()
	g.subnetNotes()
	return Result{Proposals: g.out, Notes: g.notes}
}

// gen is one run of Generate.
type gen struct {
	in      Input
	n       names
	pending map[Change]bool
	taken   map[string]bool
	out     []*Proposal
	notes   []string
	// closedBy names the generated proposal that makes each change, for
	// the After lists of those that depend on it.
	closedBy map[Change]string
}

func (g *gen) note(format string, args ...any) {
	g.notes = append(g.notes, fmt.Sprintf(format, args...))
}

// add appends p (named uniquely) unless every change it makes is pending
// already; its changes already pending are dropped by the caller.
func (g *gen) add(p *Proposal) {
	p.Kind, p.Closes, p.ref = config.Kind(p.Body.Name()), p.Body.Closes(), g.n.expr
	base := p.Name
	for i := 2; g.taken[p.Name]; i++ {
		p.Name = fmt.Sprintf("%s-%d", base, i)
	}
	g.taken[p.Name] = true
	if g.closedBy == nil {
		g.closedBy = map[Change]string{}
	}
	for _, c := range p.Closes {
		g.closedBy[c] = p.Name
	}
	g.out = append(g.out, p)
}

// after lists the generated proposals making any of cs, once each.
func (g *gen) after(cs ...Change) []string {
	var out []string
	for _, c := range cs {
		if n, ok := g.closedBy[c]; ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// names maps ids to their block names, for references and wording.
type names struct{ config.Names }

func namesOf(res *config.Resources) names { return names{config.NamesOf(res)} }

// ref is an id as a generated block writes it: a reference to its block
// when one declares it, else the id itself.
type ref struct {
	ID   string
	Kind string // subnet, node, node_operator, node_provider, guestos_version
	Name string // the block name, "" when undeclared
}

// expr is id as a generated block writes it: a reference to the block
// that declares it (as whatever it is), else the id itself.
func (n names) expr(id string) string {
	for _, r := range []ref{n.subnet(id), n.node(id), n.operator(id), n.provider(id), n.version(id)} {
		if r.Name != "" {
			return r.expr()
		}
	}
	return quote(id)
}

func (r ref) expr() string {
	if r.Name != "" {
		return r.Kind + "." + r.Name + ".id"
	}
	return quote(r.ID)
}

// word is how titles and summaries name it: the block name, else the
// id's first five characters, the way the NNS dashboard abbreviates.
func (r ref) word() string {
	if r.Name != "" {
		return r.Name
	}
	return short(r.ID)
}

func (n names) subnet(id string) ref { return ref{ID: id, Kind: "subnet", Name: n.Subnets[id]} }
func (n names) node(id string) ref   { return ref{ID: id, Kind: "node", Name: n.Nodes[id]} }
func (n names) operator(id string) ref {
	return ref{ID: id, Kind: "node_operator", Name: n.Operators[id]}
}
func (n names) provider(id string) ref {
	return ref{ID: id, Kind: "node_provider", Name: n.Providers[id]}
}
func (n names) version(id string) ref {
	return ref{ID: id, Kind: "guestos_version", Name: n.Versions[id]}
}

// short is the first five characters of a principal (its first group).
func short(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// slug makes a word fit a proposal name.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == '_' || r == ' ' || r == '.':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}
