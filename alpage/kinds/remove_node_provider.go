package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
)

// RemoveNodeProvider is a "remove_node_provider" proposal's block: the
// native governance action AddOrRemoveNodeProvider with change ToRemove.
type RemoveNodeProvider struct {
	NodeProviderID string `hcl:"node_provider_id" since:"v0.5.0" doc:"Principal of the node provider to remove (node_provider.<name>.id)."`
}

// removeNodeProvider is the kind: the native action AddOrRemoveNodeProvider
// with change ToRemove, and no other change.
var removeNodeProvider = Define(Def[RemoveNodeProvider, nns.AddOrRemoveNodeProvider, ProviderFacts]{
	Name: "remove_node_provider", Generates: "for a node provider declared decommissioned", Since: "v0.5.0",
	Doc: "Nested in a proposal of kind \"remove_node_provider\": removes a node provider. Unlike the other kinds this is a native governance action rather than an ExecuteNnsFunction. Governance rejects a provider it does not know, and removing one that still has operators orphans them; preflight checks both.",
	OnChain: Native(nns.TopicParticipantManagement,
		nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{}}},
		func(p nns.AddOrRemoveNodeProvider) *nns.ProposalActionRequest {
			return &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &p}
		},
		func(a *nns.Action) (nns.AddOrRemoveNodeProvider, bool) {
			return *a.AddOrRemoveNodeProvider, a.AddOrRemoveNodeProvider.Change.ToRemove.ID != nil
		}),
	Changes: func(p nns.AddOrRemoveNodeProvider) []Change {
		return []Change{{OpRemoveProvider, p.Change.ToRemove.ID.String(), ""}}
	},
	Seed: func(ctx context.Context, s Seeder, _ nns.AddOrRemoveNodeProvider) error {
		// governance refuses to remove a provider it does not know
		return s.Providers(ctx)
	},
	Generate: generateRemoveNodeProvider,
})

func (r *RemoveNodeProvider) Validate(c Checker) {
	c.Principal("node_provider_id", r.NodeProviderID, c.At("", 0, "node_provider_id"))
}

func (r *RemoveNodeProvider) IDs(visit func(*string)) { visit(&r.NodeProviderID) }

func (r *RemoveNodeProvider) Build(Live) (Payload[nns.AddOrRemoveNodeProvider], error) {
	p, err := onePrincipal("node_provider_id", r.NodeProviderID)
	if err != nil {
		return Payload[nns.AddOrRemoveNodeProvider]{}, err
	}
	return Payload[nns.AddOrRemoveNodeProvider]{
		Value:  nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToRemove: &nns.NodeProvider{ID: &p}}},
		Render: func(w io.Writer) { fmt.Fprintf(w, "  provider: %s\n", p) },
	}, nil
}

// Fetch reads what governance and the registry know of the provider.
func (r *RemoveNodeProvider) Fetch(ctx context.Context, rd Reader) (ProviderFacts, error) {
	return rd.Provider(ctx, r.NodeProviderID)
}

// Check checks that governance knows the provider and, as
// the registry says whether it does or not, that it has no operators (an
// unknown one is told only when it has some).
func (r *RemoveNodeProvider) Check(f ProviderFacts, _ Options) ([]Check, bool) {
	id := r.NodeProviderID
	checks := []Check{{Severity: OK, Subject: id, Message: fmt.Sprintf("governance knows node provider %s", id)}}
	if !f.Known {
		checks[0] = Check{Severity: Refused, Subject: id, Message: fmt.Sprintf("governance does not know node provider %s; it rejects removing an unknown provider, so check node_provider_id", id)}
	}
	if len(f.Operators) > 0 {
		checks = append(checks, Check{Severity: Flagged, Subject: id, Message: fmt.Sprintf("node provider %s still has %d operator(s) (%s); removing it orphans them, so remove them first", id, len(f.Operators), shortList(f.Operators))})
	} else if f.Known {
		checks = append(checks, Check{Severity: OK, Subject: id, Message: fmt.Sprintf("node provider %s has no operators left", id)})
	}
	return checks, false
}

// Closes is the provider removed.
func (r *RemoveNodeProvider) Closes() []Change {
	return []Change{{OpRemoveProvider, r.NodeProviderID, ""}}
}

// HCL writes the block as alp plan --generate does.
func (r *RemoveNodeProvider) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  remove_node_provider {\n    node_provider_id = %s\n  }\n", ref(r.NodeProviderID))
}

// Generate proposes a remove_node_provider for each declared
// decommissioned provider that will have no operator left, after the
// remove_node_operators that removes them; one that keeps operators is a
// note.
func generateRemoveNodeProvider(d *Drift) (out []Generated, notes []string) {
	removed := map[string]bool{}
	for _, o := range operatorsGone(d) {
		removed[o.id] = o.gone
	}
	for _, np := range d.Fleet.Providers {
		f, read := d.Chain.Providers[np.ID]
		if !np.Decommissioned || !read || f.Err != "" || !f.Known || d.Pending[Change{Op: OpRemoveProvider, Subject: np.ID}] {
			continue
		}
		var left []string
		var after []Change
		for _, op := range f.Operators {
			if removed[op] {
				after = append(after, Change{Op: OpRemoveOperator, Subject: op})
			} else {
				left = append(left, op)
			}
		}
		if len(left) > 0 {
			slices.Sort(left)
			notes = append(notes, fmt.Sprintf("node provider %s is declared decommissioned but still has node operators %s that are not; no remove_node_provider is generated", np.Name, "["+strings.Join(left, ", ")+"]"))
			continue
		}
		p := Generated{Body: &RemoveNodeProvider{NodeProviderID: np.ID}, After: after}
		p.Name = "remove-provider-" + slug(d.n.provider(np.ID).word())
		label := np.Label
		if label == "" {
			label = Short(np.ID)
		}
		p.Title = "Remove node provider " + label
		p.Summary = fmt.Sprintf("Remove node provider %s (principal %s).\n\nMotivation: the node provider is decommissioned; none of its node operators remain in the registry.\n", label, np.ID)
		out = append(out, p)
	}
	return out, notes
}
