package kinds_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/devnet"
	"alpnib.dev/alpage/dryrun"
	"alpnib.dev/alpage/generate"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/reconcile"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// addNodeProvider is a seventh kind, written here as a new kind is
// written: one type and its Def in one file, and one row (the append to
// kinds.All below). It adds a node provider: the native governance action
// AddOrRemoveNodeProvider with change ToAdd, the other half of the action
// remove_node_provider makes, so the local NNS executes it and only the
// kinds' exclusive claims keep the two apart. A kind of a function alp
// does not run yet also needs that function's Candid type (ic/nns) and its
// execution by the local registry (ic/localnet), which are the canister's
// side.
type addNodeProvider struct {
	NodeProviderID string `hcl:"node_provider_id" since:"v0.6.0" doc:"Principal of the node provider to add (node_provider.<name>.id)."`
}

// opAddProvider is the change an addition makes: provider Subject is added.
const opAddProvider kinds.Op = "add_provider"

var addNodeProviderKind = kinds.Define(kinds.Def[addNodeProvider, nns.AddOrRemoveNodeProvider, kinds.ProviderFacts]{
	Name: "add_node_provider", Since: "v0.6.0", Doc: "Adds a node provider.",
	Generates: "for a declared node provider governance does not know",
	OnChain: kinds.Native(nns.TopicParticipantManagement,
		nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToAdd: &nns.NodeProvider{}}},
		func(p nns.AddOrRemoveNodeProvider) *nns.ProposalActionRequest {
			return &nns.ProposalActionRequest{AddOrRemoveNodeProvider: &p}
		},
		func(a *nns.Action) (nns.AddOrRemoveNodeProvider, bool) {
			return *a.AddOrRemoveNodeProvider, a.AddOrRemoveNodeProvider.Change.ToAdd.ID != nil
		}),
	Changes: func(p nns.AddOrRemoveNodeProvider) []kinds.Change {
		return []kinds.Change{{Op: opAddProvider, Subject: p.Change.ToAdd.ID.String()}}
	},
	Seed: func(ctx context.Context, s kinds.Seeder, _ nns.AddOrRemoveNodeProvider) error {
		return s.Providers(ctx)
	},
	// Generate adds each declared provider, not decommissioned, that
	// governance does not know.
	Generate: func(d *kinds.Drift) (out []kinds.Generated, _ []string) {
		for _, np := range d.Fleet.Providers {
			f, read := d.Chain.Providers[np.ID]
			if np.Decommissioned || !read || f.Err != "" || f.Known {
				continue
			}
			out = append(out, kinds.Generated{Name: "add-provider-" + np.Name, Title: "Add node provider " + kinds.Short(np.ID), Body: &addNodeProvider{NodeProviderID: np.ID},
				Summary: "Add node provider " + np.ID + ".\n\nMotivation: it is declared, and governance does not know it.\n"})
		}
		return out, nil
	},
})

func (a *addNodeProvider) Validate(c kinds.Checker) {
	c.Principal("node_provider_id", a.NodeProviderID, c.At("", 0, "node_provider_id"))
}

func (a *addNodeProvider) IDs(visit func(*string)) { visit(&a.NodeProviderID) }

func (a *addNodeProvider) Closes() []kinds.Change {
	return []kinds.Change{{Op: opAddProvider, Subject: a.NodeProviderID}}
}

func (a *addNodeProvider) HCL(b *strings.Builder, ref func(string) string) {
	fmt.Fprintf(b, "  add_node_provider {\n    node_provider_id = %s\n  }\n", ref(a.NodeProviderID))
}

func (a *addNodeProvider) Build(kinds.Live) (kinds.Payload[nns.AddOrRemoveNodeProvider], error) {
	p, err := principal.Decode(a.NodeProviderID)
	if err != nil {
		return kinds.Payload[nns.AddOrRemoveNodeProvider]{}, fmt.Errorf("node_provider_id %q: %w", a.NodeProviderID, err)
	}
	return kinds.Payload[nns.AddOrRemoveNodeProvider]{
		Value:  nns.AddOrRemoveNodeProvider{Change: &nns.Change{ToAdd: &nns.NodeProvider{ID: &p}}},
		Render: func(w io.Writer) { fmt.Fprintf(w, "  adds:     %s\n", p) },
	}, nil
}

func (a *addNodeProvider) Fetch(ctx context.Context, r kinds.Reader) (kinds.ProviderFacts, error) {
	return r.Provider(ctx, a.NodeProviderID)
}

func (a *addNodeProvider) Check(f kinds.ProviderFacts, _ kinds.Options) ([]kinds.Check, bool) {
	if f.Known {
		return []kinds.Check{{Severity: kinds.Refused, Subject: a.NodeProviderID, Message: "governance knows node provider " + a.NodeProviderID + " already, and refuses to add it again"}}, false
	}
	return []kinds.Check{{Severity: kinds.OK, Subject: a.NodeProviderID, Message: "governance does not know node provider " + a.NodeProviderID + "; it is added"}}, false
}

// A kind added as one file and one row in the table goes through every
// engine: the table's check finds its action its own, the configuration
// reference documents its block and lists it among the kinds --generate
// proposes, the loader decodes and checks its block (and names it among
// the kinds when refusing an unknown one), the payload is built and made into its native
// action (which its kind alone claims back, as import and --generate's
// pending read it), preflight fetches and checks it against a devnet, the
// dry run seeds and executes it on a local NNS, and --generate calls its
// Generate on drift, beside what the other kinds generate, whatever its
// place in the table, and writes a block that loads back: nothing outside
// this file says when drift produces it.
func TestASeventhKindIsOneFileAndOneRowInTheTable(t *testing.T) {
	saved := kinds.All
	kinds.All = append(slices.Clone(kinds.All), addNodeProviderKind) // the one row
	t.Cleanup(func() { kinds.All = saved })
	for _, p := range kinds.TableProblems(kinds.All) {
		t.Error(p)
	}

	// the reference: its block, its field, and the kinds --generate proposes
	md := string(config.Markdown())
	for _, want := range []string{
		"### `add_node_provider { }`\n\nSince v0.6.0. Adds a node provider.\n",
		"| `node_provider_id` | attr | yes | v0.6.0 | Principal of the node provider to add (node_provider.<name>.id). |",
		", deploy_hostos, add_node_provider), in the order they must execute",
		"- `add_node_provider { }`: `node_provider_id`\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("docs/config.md as generated with the seventh kind's row lacks %q", want)
		}
	}

	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	fresh := principal.SelfAuthenticating([]byte("a fresh provider")).String()
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	// load → validate
	bad := write("bad.hcl", "proposal \"a\" {\n  kind  = \"add_node_provider\"\n  title = \"Add it\"\n  add_node_provider {\n    node_provider_id = \"not-a-principal\"\n  }\n}\n")
	if _, err := config.Load(bad); err == nil || !strings.Contains(err.Error(), "node_provider_id") || !strings.Contains(err.Error(), "bad.hcl:5") {
		t.Fatalf("a bad node_provider_id in the seventh kind's block: %v", err)
	}
	unknown := write("unknown.hcl", "proposal \"a\" {\n  kind  = \"add\"\n  title = \"Add it\"\n}\n")
	if _, err := config.Load(unknown); err == nil || !strings.Contains(err.Error(), strings.Join(kinds.Names(), ", ")) || !strings.Contains(err.Error(), ", add_node_provider") {
		t.Fatalf("an unknown kind's message does not list the seventh: %v", err)
	}
	good := write("proposals.hcl", "proposal \"add-fresh\" {\n  kind  = \"add_node_provider\"\n  title = \"Add the fresh provider\"\n  add_node_provider {\n    node_provider_id = \""+strings.ToUpper(fresh)+"\"\n  }\n}\n")
	cfg, err := config.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	decl := cfg.Proposal("add-fresh")
	if a, ok := decl.Body.(*addNodeProvider); !ok || a.NodeProviderID != fresh {
		t.Fatalf("decoded %#v, want the seventh kind's block with its id canonical", decl.Body)
	}

	// payload, and the action claimed back by its kind alone
	p, err := proposal.Build(decl)
	if err != nil {
		t.Fatal(err)
	}
	var pl nns.AddOrRemoveNodeProvider
	if err := candid.Unmarshal(p.Payload, &pl); err != nil || pl.Change == nil || pl.Change.ToAdd == nil || pl.Change.ToAdd.ID.String() != fresh {
		t.Fatalf("payload %+v (%v)", pl, err)
	}
	if a := p.Action.AddOrRemoveNodeProvider; a == nil || a.Change.ToAdd == nil || p.Topic != nns.TopicParticipantManagement || p.Function != nns.FunctionUnspecified {
		t.Fatalf("action %+v topic %v", p.Action, p.Topic)
	}
	if k := kinds.Claimant(p.Action); k != addNodeProviderKind {
		t.Fatalf("the seventh kind's action is claimed by %v", k)
	}
	if got := kinds.ChangesOfAction(p.Action); !slices.Equal(got, []kinds.Change{{Op: opAddProvider, Subject: fresh}}) {
		t.Fatalf("the seventh kind's action on-chain changes %v", got)
	}
	var summary strings.Builder
	p.Render(&summary)
	if !strings.Contains(summary.String(), "adds:     "+fresh) || !strings.Contains(summary.String(), "action:   AddOrRemoveNodeProvider") {
		t.Errorf("summary lacks the kind's lines:\n%s", summary.String())
	}

	// preflight, against a devnet
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg, gov := startDevnet(ctx, t, fleet)
	r, err := (&preflight.Fetcher{Registry: reg, Governance: gov}).Run(ctx, decl, preflight.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != preflight.VerdictReady || len(r.Checks) != 1 || !strings.Contains(r.Checks[0].Message, "it is added") || r.PayloadSHA256 != p.PayloadSHA256 {
		t.Fatalf("preflight %+v", r)
	}

	// dry run, on a local NNS seeded from the devnet
	v, err := reg.GetLatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := dryrun.Gather(ctx, dryrun.Live{Registry: reg, Version: v, Governance: gov}, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(seed.Providers) == 0 {
		t.Fatalf("the seed lacks the providers governance knows: %+v", seed)
	}
	res, err := dryrun.Run(ctx, seed, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Fatalf("dry run: %+v", res)
	}
	known := seed.Providers[0].String()
	seed.Providers = append(seed.Providers, principal.MustDecode(fresh))
	if res, err := dryrun.Run(ctx, seed, p, 1); err != nil || !res.Failed() || !strings.Contains(res.FailureReason, "already exists") {
		t.Fatalf("adding a provider governance knows: %+v (%v)", res, err)
	}

	// --generate: drift produces the kind, beside what the other kinds
	// generate, wherever its row is; what is pending is not generated
	// again; and the blocks written load back
	gen := filepath.Join(dir, "generate")
	if err := os.Mkdir(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	resources := fmt.Sprintf("node_provider \"fresh\" {\n  id = %q\n}\nnode_provider \"gone\" {\n  id             = %q\n  decommissioned = true\n}\n", fresh, known)
	if err := os.WriteFile(filepath.Join(gen, "resources.hcl"), []byte(resources), 0o644); err != nil {
		t.Fatal(err)
	}
	declared, err := config.LoadResources(gen)
	if err != nil {
		t.Fatal(err)
	}
	chain := &reconcile.Live{Providers: map[string]reconcile.ProviderFacts{fresh: {}, known: {Known: true}}}
	const add, remove = "add-provider-fresh", "remove-provider-gone"
	for _, c := range []struct {
		table []kinds.Kind
		want  []string
	}{
		{kinds.All, []string{remove, add}},
		{append([]kinds.Kind{addNodeProviderKind}, saved...), []string{add, remove}},
	} {
		kinds.All = c.table
		g := generate.Generate(generate.Input{Res: &declared.Resources, Live: chain})
		names := make([]string, len(g.Proposals))
		for i, p := range g.Proposals {
			names[i] = p.Name
		}
		if !slices.Equal(names, c.want) || len(g.Notes) != 0 {
			t.Fatalf("with %s first in the table: generated %v, want %v; notes %v", c.table[0].Name(), names, c.want, g.Notes)
		}
		added := g.Proposals[slices.Index(names, add)]
		if b, ok := added.Body.(*addNodeProvider); !ok || b.NodeProviderID != fresh || added.Kind != "add_node_provider" || len(added.After) != 0 || added.Title != "Add node provider "+kinds.Short(fresh) {
			t.Fatalf("with %s first in the table: generated %+v", c.table[0].Name(), added)
		}
	}
	pending := generate.Generate(generate.Input{Res: &declared.Resources, Live: chain, Pending: kinds.ChangesOfAction(p.Action)})
	if len(pending.Proposals) != 1 || pending.Proposals[0].Name != remove {
		t.Fatalf("an addition already under way is generated again: %v", pending.Proposals)
	}
	generated := generate.Generate(generate.Input{Res: &declared.Resources, Live: chain})
	var hcl strings.Builder
	if err := generate.WriteHCL(&hcl, generated.Proposals); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hcl.String(), "proposal \"add-provider-fresh\" {") || !strings.Contains(hcl.String(), "node_provider_id = node_provider.fresh.id") {
		t.Errorf("the addition's block:\n%s", hcl.String())
	}
	proposals := filepath.Join(gen, "proposals.hcl")
	if err := os.WriteFile(proposals, []byte(hcl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := config.Load(proposals)
	if err != nil {
		t.Fatalf("the generated blocks do not load: %v\n%s", err, hcl.String())
	}
	if b, ok := again.Proposal("add-provider-fresh").Body.(*addNodeProvider); !ok || b.NodeProviderID != fresh {
		t.Fatalf("loaded back %#v", again.Proposal("add-provider-fresh").Body)
	}
}

// startDevnet starts a devnet of fleet for the test and returns clients of
// its registry and governance.
func startDevnet(ctx context.Context, t *testing.T, fleet *devnet.Fleet) (nns.RegistryClient, nns.GovernanceClient) {
	t.Helper()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	return nns.RegistryClient{Caller: a}, nns.GovernanceClient{Caller: a}
}
