package kinds_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
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

// haltSubnet is a seventh kind, written here as a new kind is written: one
// type in one file, and one line (the append to kinds.All below). It halts
// a subnet with update_subnet's function, so the local NNS can execute it:
// a kind of a function alp does not run yet also needs that function's
// Candid type (ic/nns) and its execution by the local registry
// (ic/localnet), which are the canister's side. Sharing a function with a
// shipped kind is what TestEveryKindInTheTableIsWhatTheEnginesTakeItFor
// refuses of the table itself (an on-chain proposal would match both);
// this kind lives only for the test.
type haltSubnet struct {
	SubnetID string `hcl:"subnet_id" since:"v0.6.0" doc:"Subnet to halt (subnet.<name>.id)."`
}

func (*haltSubnet) Name() string { return "halt_subnet" }

func (*haltSubnet) Docs() []kinds.BlockDoc {
	return []kinds.BlockDoc{{Header: `halt_subnet { }`, Since: "v0.6.0", Type: reflect.TypeFor[haltSubnet](), Doc: "Halts a subnet."}}
}

func (*haltSubnet) New() kinds.Kind           { return &haltSubnet{} }
func (*haltSubnet) Function() nns.NnsFunction { return nns.FunctionUpdateConfigOfSubnet }
func (*haltSubnet) NewPayload() any           { return &nns.UpdateSubnetPayload{} }
func (*haltSubnet) LiveSubnet() string        { return "" }

// opHalt is the change a halt makes: subnet Subject halts.
const opHalt kinds.Op = "halt"

func (h *haltSubnet) Closes() []kinds.Change {
	return []kinds.Change{{Op: opHalt, Subject: h.SubnetID}}
}

// Generate halts each declared subnet all of whose declared nodes are
// decommissioned, once its members have left it: it waits on their
// removal, whichever kind generates that.
func (*haltSubnet) Generate(d *kinds.Drift) (out []kinds.Generated, _ []string) {
	for _, s := range d.Fleet.Subnets {
		declared, decommissioned := 0, 0
		for _, n := range d.Fleet.Nodes {
			if n.Subnet == s.ID {
				declared++
				if n.Decommissioned {
					decommissioned++
				}
			}
		}
		live := d.Chain.Subnets[s.ID]
		if !live.Found || declared == 0 || decommissioned < declared {
			continue
		}
		g := kinds.Generated{Name: "halt-" + s.Name, Title: "Halt subnet " + kinds.Short(s.ID), Body: &haltSubnet{SubnetID: s.ID},
			Summary: "Halt subnet " + s.ID + ".\n\nMotivation: every node declared in it is decommissioned.\n"}
		for _, m := range live.Members {
			g.After = append(g.After, kinds.Change{Op: kinds.OpRemove, Subject: m, Target: s.ID})
		}
		out = append(out, g)
	}
	return out, nil
}

func (h *haltSubnet) Validate(c kinds.Checker) {
	c.Principal("subnet_id", h.SubnetID, c.At("", 0, "subnet_id"))
}

func (h *haltSubnet) IDs(visit func(*string)) { visit(&h.SubnetID) }

func (h *haltSubnet) Build(kinds.Live) (kinds.Built, error) {
	p, err := principal.Decode(h.SubnetID)
	if err != nil {
		return nil, fmt.Errorf("subnet_id %q: %w", h.SubnetID, err)
	}
	return haltPayload{p}, nil
}

type haltPayload struct{ subnet principal.Principal }

func (h haltPayload) Payload() any {
	halt := true
	return nns.UpdateSubnetPayload{SubnetID: h.subnet, IsHalted: &halt}
}

func (h haltPayload) Render(w io.Writer) { fmt.Fprintf(w, "  halts:    %s\n", h.subnet) }

func (h *haltSubnet) Fetch(ctx context.Context, r kinds.Reader, s *kinds.Snapshot) (err error) {
	s.Subnet, err = r.Subnet(ctx, h.SubnetID)
	return err
}

func (h *haltSubnet) Check(s *kinds.Snapshot, _ kinds.Options) ([]kinds.Check, bool) {
	switch {
	case s.Subnet == nil:
		return []kinds.Check{{Severity: kinds.Refused, Subject: h.SubnetID, Message: "subnet " + h.SubnetID + " is not in the registry"}}, false
	case s.Subnet.IsHalted:
		return []kinds.Check{{Severity: kinds.Note, Subject: h.SubnetID, Message: "subnet " + h.SubnetID + " is halted already"}}, true
	}
	return []kinds.Check{{Severity: kinds.OK, Subject: h.SubnetID, Message: "subnet " + h.SubnetID + " runs; it halts"}}, false
}

func (h *haltSubnet) Seed(ctx context.Context, s kinds.Seeder, payload any) error {
	return s.SubnetWithMembers(ctx, payload.(nns.UpdateSubnetPayload).SubnetID)
}

func (*haltSubnet) Changes(*nns.Action) ([]kinds.Change, bool) { return nil, false }

func (h *haltSubnet) HCL(b *strings.Builder, ref func(string) string) {
	fmt.Fprintf(b, "  halt_subnet {\n    subnet_id = %s\n  }\n", ref(h.SubnetID))
}

// A kind added as one type and one line in the table goes through every
// engine: the loader decodes and checks its block, the payload is built
// and made into an ExecuteNnsFunction, preflight fetches and checks it
// against a devnet, the dry run seeds and executes it on a local NNS, and
// --generate calls its Generate on drift, orders what it proposes after
// what it waits on and writes a block that loads back: nothing outside
// this file says when drift produces it.
func TestASeventhKindIsOneTypeAndOneLineInTheTable(t *testing.T) {
	saved := kinds.All
	kinds.All = append(slices.Clone(kinds.All), &haltSubnet{}) // the one line
	t.Cleanup(func() { kinds.All = saved })

	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	subnet := fleet.Subnets[0].ID
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	// load → validate
	bad := write("bad.hcl", "proposal \"h\" {\n  kind  = \"halt_subnet\"\n  title = \"Halt it\"\n  halt_subnet {\n    subnet_id = \"not-a-principal\"\n  }\n}\n")
	if _, err := config.Load(bad); err == nil || !strings.Contains(err.Error(), "subnet_id") || !strings.Contains(err.Error(), "bad.hcl:5") {
		t.Fatalf("a bad subnet_id in the seventh kind's block: %v", err)
	}
	unknown := write("unknown.hcl", "proposal \"h\" {\n  kind  = \"halt\"\n  title = \"Halt it\"\n}\n")
	if _, err := config.Load(unknown); err == nil || !strings.Contains(err.Error(), "remove_node_provider, halt_subnet") {
		t.Fatalf("an unknown kind's message does not list the seventh: %v", err)
	}
	good := write("proposals.hcl", "proposal \"halt-app\" {\n  kind  = \"halt_subnet\"\n  title = \"Halt the app subnet\"\n  halt_subnet {\n    subnet_id = \""+strings.ToUpper(subnet)+"\"\n  }\n}\n")
	cfg, err := config.Load(good)
	if err != nil {
		t.Fatal(err)
	}
	decl := cfg.Proposal("halt-app")
	if h, ok := decl.Body.(*haltSubnet); !ok || h.SubnetID != subnet {
		t.Fatalf("decoded %#v, want the seventh kind's block with its id canonical", decl.Body)
	}

	// payload
	p, err := proposal.Build(decl)
	if err != nil {
		t.Fatal(err)
	}
	var pl nns.UpdateSubnetPayload
	if err := candid.Unmarshal(p.Payload, &pl); err != nil || pl.SubnetID.String() != subnet || pl.IsHalted == nil || !*pl.IsHalted {
		t.Fatalf("payload %+v (%v)", pl, err)
	}
	if p.Action.ExecuteNnsFunction == nil || p.Action.ExecuteNnsFunction.NnsFunction != int32(nns.FunctionUpdateConfigOfSubnet) || p.Topic != nns.FunctionUpdateConfigOfSubnet.Topic() {
		t.Fatalf("action %+v topic %v", p.Action, p.Topic)
	}
	var summary strings.Builder
	p.Render(&summary)
	if !strings.Contains(summary.String(), "halts:    "+subnet) {
		t.Errorf("summary lacks the kind's line:\n%s", summary.String())
	}

	// preflight, against a devnet
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	a, err := agent.New(agent.Config{URL: d.ICURL, FetchRootKey: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, gov := nns.RegistryClient{Caller: a}, nns.GovernanceClient{Caller: a}
	r, err := (&preflight.Fetcher{Registry: reg, Governance: gov}).Run(ctx, decl, preflight.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != preflight.VerdictReady || len(r.Checks) != 1 || !strings.Contains(r.Checks[0].Message, "runs; it halts") || r.PayloadSHA256 != p.PayloadSHA256 {
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
	if _, ok := seed.Records[nns.SubnetRecordKey(subnet)]; !ok {
		t.Fatalf("the seed lacks the subnet's record: %v", slices.Collect(maps.Keys(seed.Records)))
	}
	res, err := dryrun.Run(ctx, seed, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() || !slices.Contains(res.Changes, dryrun.Change{Key: nns.SubnetRecordKey(subnet)}) {
		t.Fatalf("dry run: %+v", res)
	}

	// --generate: drift produces the kind, after what it waits on, whatever
	// its place in the table; what is pending is not generated again; and
	// the blocks written load back
	gen := filepath.Join(dir, "generate")
	if err := os.Mkdir(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	na, nb := principal.SelfAuthenticating([]byte("halt-a")).String(), principal.SelfAuthenticating([]byte("halt-b")).String()
	resources := fmt.Sprintf("subnet \"app\" {\n  id = %q\n}\n", subnet)
	for i, n := range []string{na, nb} {
		resources += fmt.Sprintf("node \"node_%d\" {\n  id             = %q\n  subnet         = subnet.app.id\n  decommissioned = true\n}\n", i, n)
	}
	if err := os.WriteFile(filepath.Join(gen, "resources.hcl"), []byte(resources), 0o644); err != nil {
		t.Fatal(err)
	}
	declared, err := config.LoadResources(gen)
	if err != nil {
		t.Fatal(err)
	}
	chain := &reconcile.Live{
		Subnets: map[string]reconcile.SubnetFacts{subnet: {Found: true, Members: []string{na, nb}, Type: "application"}},
		Nodes:   map[string]reconcile.NodeFacts{na: {Found: true}, nb: {Found: true}},
	}
	const leave = "remove-2-nodes-from-app"
	for _, c := range []struct {
		table []kinds.Kind
		want  []string
	}{
		{kinds.All, []string{leave, "remove-2-nodes", "halt-app"}},
		// first in the table, it still comes after what it waits on
		{append([]kinds.Kind{&haltSubnet{}}, saved...), []string{leave, "halt-app", "remove-2-nodes"}},
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
		halt := g.Proposals[slices.Index(names, "halt-app")]
		if h, ok := halt.Body.(*haltSubnet); !ok || h.SubnetID != subnet || halt.Kind != "halt_subnet" || !slices.Equal(halt.After, []string{leave}) || halt.Title != "Halt subnet "+kinds.Short(subnet) {
			t.Fatalf("with %s first in the table: generated %+v", c.table[0].Name(), halt)
		}
	}
	pending := generate.Generate(generate.Input{Res: &declared.Resources, Live: chain, Pending: []generate.Change{{Op: opHalt, Subject: subnet}}})
	if len(pending.Proposals) != 2 || slices.ContainsFunc(pending.Proposals, func(p *generate.Proposal) bool { return p.Kind == "halt_subnet" }) {
		t.Fatalf("a halt already under way is generated again: %v", pending.Proposals)
	}
	generated := generate.Generate(generate.Input{Res: &declared.Resources, Live: chain})
	var hcl strings.Builder
	if err := generate.WriteHCL(&hcl, generated.Proposals); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hcl.String(), "# apply once "+leave+" has executed\nproposal \"halt-app\" {") || !strings.Contains(hcl.String(), "subnet_id = subnet.app.id") {
		t.Errorf("the halt's block:\n%s", hcl.String())
	}
	proposals := filepath.Join(gen, "proposals.hcl")
	if err := os.WriteFile(proposals, []byte(hcl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := config.Load(proposals)
	if err != nil {
		t.Fatalf("the generated blocks do not load: %v\n%s", err, hcl.String())
	}
	if h, ok := again.Proposal("halt-app").Body.(*haltSubnet); !ok || h.SubnetID != subnet {
		t.Fatalf("loaded back %#v", again.Proposal("halt-app").Body)
	}
}
