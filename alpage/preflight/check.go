package preflight

import (
	"fmt"
	"maps"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
)

// Options change how strict the checks are.
type Options struct {
	// Force submits an unelected deploy_guestos version anyway and lets a
	// failed elected lookup pass; both become warnings.
	Force bool
	// ForApply is set by apply: a failed elected lookup then refuses unless
	// Force. Plan always degrades it to a warning.
	ForApply bool
	// Minimums holds each declared subnet's min_nakamoto_coefficients by
	// subnet id (MinimumsOf).
	Minimums map[string]map[string]int
	// Names maps ids to the names the config gives them (NamesOf), so a
	// message reads "node n4 (yhgsq-…)" instead of a bare principal.
	Names map[string]string
}

// Evaluate runs the preflight of p over live state. It is pure: everything it
// reads is in live. PayloadSHA256 is left for the caller to fill in.
func Evaluate(p *config.Proposal, live Live, opts Options) Report {
	var (
		checks []Check
		noop   bool
	)
	if k := kinds.Of(string(p.Kind)); k != nil && p.Body != nil {
		checks, noop = k.Check(p.Body, live.Facts, kinds.Options{Force: opts.Force, ForApply: opts.ForApply, Minimums: opts.Minimums})
	} else {
		checks = []Check{{Severity: Refused, Message: fmt.Sprintf("kind %q has no preflight", p.Kind)}}
	}
	names := withLabels(opts.Names, p)
	for i := range checks {
		checks[i].Message = withNames(checks[i].Message, names)
		if rank(checks[i].Severity) > rank(Warning) {
			checks[i].At = where(p, checks[i])
		}
	}
	return Report{Name: p.Name, Kind: string(p.Kind), Verdict: verdict(checks, noop), RegistryVersion: live.RegistryVersion, Checks: checks}
}

// where is the file:line of what check c of p is about: its update_subnet
// field, else its subject (an id or version as the body writes it), else
// the proposal's block; "" for a proposal no file declares.
func where(p *config.Proposal, c Check) string {
	key := c.Field
	if key == "" {
		key = c.Subject
	}
	r := p.Where(key)
	if r.Filename == "" {
		return ""
	}
	return config.Site(r)
}

// MinimumsOf maps each declared subnet's id to the Nakamoto minimums its
// block declares, for the subnets that declare any.
func MinimumsOf(r *config.Resources) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, s := range r.Subnets {
		if len(s.MinNakamoto) > 0 {
			out[s.ID] = s.MinNakamoto
		}
	}
	return out
}

// NamesOf maps every declared resource id to its block name.
func NamesOf(r *config.Resources) map[string]string {
	names := map[string]string{}
	for _, s := range r.Subnets {
		names[s.ID] = s.Name
	}
	for _, p := range r.NodeProviders {
		names[p.ID] = p.Name
	}
	for _, o := range r.NodeOperators {
		names[o.ID] = o.Name
	}
	for _, v := range r.GuestOSVersions {
		names[v.ID] = v.Name
	}
	for _, n := range r.Nodes {
		names[n.ID] = n.Name
	}
	return names
}

// withLabels adds to names the label of each add, remove and node block of
// p whose id no resource block names (the schema's "optional
// human-readable name"); a block name wins over a label.
func withLabels(names map[string]string, p *config.Proposal) map[string]string {
	var refs []kinds.NodeRef
	if k := kinds.Of(string(p.Kind)); k != nil && p.Body != nil {
		refs = k.Labels(p.Body)
	}
	out, cloned := names, false
	for _, r := range refs {
		if r.Label == "" || names[r.ID] != "" {
			continue
		}
		if !cloned {
			out, cloned = maps.Clone(names), true // the caller's map stays as it was
			if out == nil {
				out = map[string]string{}
			}
		}
		out[r.ID] = r.Label
	}
	return out
}

// withNames writes "name (id)" for each id in msg that has a name, except
// inside a registry key (replica_version_<id>).
func withNames(msg string, names map[string]string) string {
	if len(names) == 0 {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		end := i
		for end < len(msg) && msg[end] != ' ' && msg[end] != ',' && msg[end] != ';' && msg[end] != '(' && msg[end] != ')' {
			end++
		}
		word := msg[i:end]
		if name, ok := names[word]; ok && name != "" {
			b.WriteString(name + " (" + word + ")")
		} else {
			b.WriteString(word)
		}
		if end < len(msg) {
			b.WriteByte(msg[end])
			end++
		}
		i = end
	}
	return b.String()
}
