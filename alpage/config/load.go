// Package config loads an alp configuration: resources.hcl plus every
// resources/*.hcl beside it, and proposals.hcl. It resolves the
// `<kind>.<name>.id` references between blocks, applies every load-time rule
// of the v0.5.0 schema, and reports each problem as an HCL diagnostic with
// file, line and column.
//
// The schema itself lives in the struct tags of schema.go, which is also what
// docs/config.md is generated from.
package config

//go:generate go run ./internal/gendoc ../../docs/config.md

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Config is a loaded, validated configuration.
type Config struct {
	// ProposalsFile is the path proposals.hcl was read from ("" when only
	// resources were loaded).
	ProposalsFile string
	Resources
	Provider  *Provider
	Proposals []*Proposal
}

// Resources are the declared fleet: every resource block of resources.hcl
// and resources/*.hcl, in file order (files sorted by name).
type Resources struct {
	Subnets         []*Subnet
	DataCenters     []*DataCenter
	NodeProviders   []*NodeProvider
	NodeOperators   []*NodeOperator
	GuestOSVersions []*GuestOSVersion
	HostOSVersions  []*HostOSVersion
	Nodes           []*Node
}

// Proposal returns the proposal named name, or nil.
func (c *Config) Proposal(name string) *Proposal {
	for _, p := range c.Proposals {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// DefaultGuestOSVersion returns the guestos_version marked default, or nil.
func (r *Resources) DefaultGuestOSVersion() *GuestOSVersion {
	for _, v := range r.GuestOSVersions {
		if v.Default {
			return v
		}
	}
	return nil
}

// Error is a failed load: every problem found, each with its place.
type Error struct {
	Diagnostics hcl.Diagnostics
}

// maxShownErrors is how many problems Error lists; a file of garbage has
// one per character, and the first few say what is wrong.
const maxShownErrors = 20

func (e *Error) Error() string {
	var b strings.Builder
	n, more := 0, 0
	var last *hcl.Range
	errs := 0
	for _, d := range e.Diagnostics {
		if d.Severity == hcl.DiagError {
			errs++
		}
	}
	// The same problem at many places (one undeclared reference used in
	// twenty blocks) is said once, with the other places after it.
	type group struct {
		first *hcl.Diagnostic
		also  []string
	}
	var groups []*group
	byText := map[string]*group{}
	for _, d := range e.Diagnostics {
		if d.Severity != hcl.DiagError || (errs > 1 && isUnknownValueEcho(d)) {
			continue
		}
		key := d.Summary + "\x00" + d.Detail
		if g := byText[key]; g != nil {
			if d.Subject != nil {
				g.also = append(g.also, Site(*d.Subject))
			}
			continue
		}
		g := &group{first: d}
		byText[key] = g
		groups = append(groups, g)
	}
	for _, g := range groups {
		if n == maxShownErrors {
			more += 1 + len(g.also)
			last = g.first.Subject
			continue
		}
		if n > 0 {
			b.WriteByte('\n')
		}
		n++
		b.WriteString(FormatDiagnostic(g.first))
		if len(g.also) > 0 {
			shown := g.also[:min(len(g.also), 5)]
			fmt.Fprintf(&b, " (the same at %d more place(s): %s", len(g.also), strings.Join(shown, ", "))
			if len(g.also) > len(shown) {
				fmt.Fprintf(&b, " and %d more", len(g.also)-len(shown))
			}
			b.WriteByte(')')
		}
	}
	if more > 0 {
		b.WriteByte('\n')
		if last != nil {
			fmt.Fprintf(&b, "%s: ", last.Filename)
		}
		fmt.Fprintf(&b, "and %d more problem(s)", more)
	}
	return b.String()
}

// isUnknownValueEcho reports whether d is the decoder's "value must be
// known", which only follows another error (a function call, an unknown
// variable) that made the value unknown and says nothing that one does not.
func isUnknownValueEcho(d *hcl.Diagnostic) bool {
	return d.Summary == "Unsuitable value type" && strings.HasSuffix(d.Detail, "value must be known")
}

// FormatDiagnostic renders one diagnostic as "file:line:col: summary: detail".
func FormatDiagnostic(d *hcl.Diagnostic) string {
	var b strings.Builder
	if d.Subject != nil {
		fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
	}
	b.WriteString(d.Summary)
	if d.Detail != "" {
		b.WriteString(": ")
		b.WriteString(d.Detail)
	}
	return b.String()
}

// Load reads the proposals file at proposalsPath and the resources beside it
// (resources.hcl and resources/*.hcl in the same folder). A missing
// resources.hcl is an empty fleet; a missing proposals file is an error.
func Load(proposalsPath string) (*Config, error) {
	return LoadWith(proposalsPath, Limits{})
}

// LoadWith is Load within lim.
func LoadWith(proposalsPath string, lim Limits) (*Config, error) {
	if _, err := os.Stat(proposalsPath); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load config: %s does not exist; run alp in the folder that holds proposals.hcl or point --config at it", proposalsPath)
		}
		return nil, fmt.Errorf("load config: %w", err)
	}
	l := newLoader(lim)
	l.parseResources(filepath.Dir(proposalsPath))
	l.parse(proposalsPath, proposalsFile)
	return l.finish(proposalsPath)
}

// LoadResources reads only the resources in dir (resources.hcl and
// resources/*.hcl), for commands that need no proposals.
func LoadResources(dir string) (*Config, error) {
	return LoadResourcesWith(dir, Limits{})
}

// LoadResourcesWith is LoadResources within lim.
func LoadResourcesWith(dir string, lim Limits) (*Config, error) {
	l := newLoader(lim)
	l.parseResources(dir)
	return l.finish("")
}

type fileKind int

const (
	resourcesFile fileKind = iota
	proposalsFile
)

type loader struct {
	limits Limits
	diags  hcl.Diagnostics
	// blocks collects the top-level blocks of every file in load order.
	blocks map[string][]*hcl.Block
	// scope holds every resource once decoded, for proposals to refer to.
	scope *scope
	// defs finds a decoded resource's block again by its header range, so
	// a rule broken by one attribute can point at that attribute.
	defs map[hcl.Range]*hcl.Block
	// versionNames maps each guestos_version block name that is not also a
	// version id to its id, to tell a name written where an id belongs.
	versionNames map[string]string
	// hostOSNames is versionNames of the hostos_version blocks.
	hostOSNames map[string]string
}

func newLoader(lim Limits) *loader {
	return &loader{limits: lim, blocks: map[string][]*hcl.Block{}, defs: map[hcl.Range]*hcl.Block{}}
}

// attr is the range of attribute name in the resource block whose header
// is at def, or def itself when the attribute is not written there.
func (l *loader) attr(def hcl.Range, name string) hcl.Range {
	if b := l.defs[def]; b != nil {
		return attrRange(b, name)
	}
	return def
}

var resourcesSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "subnet", LabelNames: []string{"name"}},
	{Type: "data_center", LabelNames: []string{"name"}},
	{Type: "node_provider", LabelNames: []string{"name"}},
	{Type: "node_operator", LabelNames: []string{"name"}},
	{Type: "guestos_version", LabelNames: []string{"name"}},
	{Type: "hostos_version", LabelNames: []string{"name"}},
	{Type: "node", LabelNames: []string{"name"}},
}}

var proposalsSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "provider"},
	{Type: "proposal", LabelNames: []string{"name"}},
}}

// ResourceFiles lists the resource files of the configuration folder dir
// in the order they are read: resources.hcl when it exists, then
// resources/*.hcl sorted.
func ResourceFiles(dir string) []string {
	var files []string
	main := filepath.Join(dir, "resources.hcl")
	if _, err := os.Stat(main); err == nil {
		files = append(files, main)
	}
	more, _ := filepath.Glob(filepath.Join(dir, "resources", "*.hcl"))
	sort.Strings(more)
	return append(files, more...)
}

func (l *loader) parseResources(dir string) {
	for _, f := range ResourceFiles(dir) {
		l.parse(f, resourcesFile)
	}
}

func (l *loader) parse(path string, kind fileKind) {
	f, diags := ParseFile(path, l.limits)
	l.diags = append(l.diags, diags...)
	if diags.HasErrors() || f == nil {
		return
	}
	schema := resourcesSchema
	if kind == proposalsFile {
		schema = proposalsSchema
	}
	content, diags := f.Body.Content(schema)
	l.diags = append(l.diags, diags...)
	for _, b := range content.Blocks {
		l.blocks[b.Type] = append(l.blocks[b.Type], b)
	}
}

func (l *loader) finish(proposalsPath string) (*Config, error) {
	if l.diags.HasErrors() {
		return nil, &Error{Diagnostics: l.diags}
	}
	c := &Config{ProposalsFile: proposalsPath}
	l.decodeResources(&c.Resources)
	decoded := !l.diags.HasErrors()
	if decoded {
		l.validateResources(&c.Resources)
	}
	// Proposals refer to resources by name, so they wait for every
	// resource block to decode, not for the resources' rules to pass: one
	// load names a broken resource and every broken proposal.
	if proposalsPath != "" && decoded {
		l.decodeProposals(c)
	}
	if l.diags.HasErrors() {
		return nil, &Error{Diagnostics: l.diags}
	}
	canonicalize(c)
	return c, nil
}

func (l *loader) errorf(subject *hcl.Range, summary, format string, args ...any) {
	l.diags = append(l.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(format, args...),
		Subject:  subject,
	})
}

// Site renders a range as file:line, for messages that name a place.
func Site(r hcl.Range) string { return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line) }
