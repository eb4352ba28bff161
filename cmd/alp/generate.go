package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/generate"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/reconcile"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/nns"
	"alpnib.dev/internal/atomicfile"
)

// generateJSON is `alp plan --generate --output json`.
type generateJSON struct {
	Proposals []generatedJSON `json:"proposals"`
	Notes     []string        `json:"notes"`
	// File is where the blocks were written ("" for stdout, or none).
	File string `json:"file,omitempty"`
	HCL  string `json:"hcl"`
}

type generatedJSON struct {
	Name          string      `json:"name"`
	Kind          config.Kind `json:"kind"`
	Title         string      `json:"title"`
	After         []string    `json:"after"`
	PayloadSHA256 string      `json:"payload_sha256"`
}

// openProposalPages bounds the list_proposals pages read for open ones.
const openProposalPages = 20

// runGenerate is `alp plan --generate`: the proposal blocks that close the
// drift reconcile would report, to outFile or stdout; notes on stderr.
func runGenerate(cmd *cobra.Command, g *globals, live liveFlags, outFile, output string) error {
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	cfg, err := g.loadResourcesConfig(stderr)
	if err != nil {
		return err
	}
	st, err := g.loadState()
	if err != nil {
		return err
	}
	a, network, err := g.readAgent(cmd.Context(), cfg, stderr)
	if err != nil {
		return err
	}
	if err := g.bindState(st, network); err != nil {
		return err
	}
	host := network.Host
	fmt.Fprintf(stderr, "reading %d node(s) and what governance has open from %s…\n", len(cfg.Nodes), host)
	ctx, cancel := context.WithTimeout(cmd.Context(), reconcileTimeout)
	defer cancel()
	reg, closeReg, err := reconcileRegistry(ctx, a, stderr)
	if err != nil {
		return err
	}
	defer closeReg()
	gov := nns.GovernanceClient{Caller: a}
	explorer := live.explorer()
	ns, err := source.NewNodeStatusTimeout(os.Getenv(source.NodeStatusCAEnv), 0)
	if err != nil {
		return err
	}
	// One reading of each node's status: reconcile's version and the
	// health replacements are chosen by come from the same reply.
	ns = ns.Remembering()
	f := &reconcile.Fetcher{Registry: reg, Governance: gov, Explorer: explorer, Dashboard: live.dashboard(), NodeStatus: ns}
	snap, err := f.Fetch(ctx, &cfg.Resources, nil, false)
	if err != nil {
		return fmt.Errorf("plan --generate: %w", err)
	}
	if failed := reconcileFailedReads(&cfg.Resources, snap); failed != "" {
		return fmt.Errorf("plan --generate: registry or governance reads failed, so the drift is not known: %s", failed)
	}
	operatorNodesOfDecommissioned(ctx, reg, explorer, &cfg.Resources, snap)
	open, err := openProposals(ctx, gov)
	if err != nil {
		return fmt.Errorf("plan --generate: %w", err)
	}
	taken := map[string]bool{}
	for _, p := range cfg.Proposals {
		taken[p.Name] = true
	}
	for name := range st.Proposals {
		taken[name] = true
	}
	pending := append(generate.PendingDeclared(cfg.Proposals, st), generate.PendingInGovernance(open)...)
	// Preflight reads what the drift was read from: the copy at its
	// version (or the canister), not a copy brought up to date again.
	pf := &preflight.Fetcher{Registry: nns.RegistryClient{Caller: a}, Governance: gov, Explorer: explorer, Dashboard: live.dashboard(), NodeStatus: ns}
	if r, ok := reg.(preflight.Registry); ok {
		pf.Registry = r
	}
	topo := pf.Topology(ctx, snap.RegistryVersion, topologyNodes(&cfg.Resources, snap))
	res := generate.Generate(generate.Input{Res: &cfg.Resources, Live: snap, Pending: pending, Made: generate.Made(cfg.Proposals, st), Taken: taken, Topology: topo})
	for _, n := range res.Notes {
		printSafe(stderr, "note: "+n)
	}
	built, checked, err := checkGenerated(g.configPath, res.Proposals, g.limits())
	if err != nil {
		return err
	}
	if len(res.Proposals) > 0 {
		refused, notes, err := preflightGenerated(ctx, pf, checked, res.Proposals)
		if err != nil {
			return err
		}
		var dropped []string
		res.Proposals, dropped = generate.Drop(res.Proposals, refused)
		for _, n := range append(notes, dropped...) {
			printSafe(stderr, "note: "+n)
		}
		res.Notes = append(append(res.Notes, notes...), dropped...)
	}
	var hcl bytes.Buffer
	if err := generate.WriteHCL(&hcl, res.Proposals); err != nil {
		return err
	}
	report := generateJSON{Proposals: []generatedJSON{}, Notes: append([]string{}, res.Notes...), HCL: hcl.String()}
	for _, p := range res.Proposals {
		report.Proposals = append(report.Proposals, generatedJSON{Name: p.Name, Kind: p.Kind, Title: p.Title, After: append([]string{}, p.After...), PayloadSHA256: built[p.Name]})
	}
	switch {
	case len(res.Proposals) == 0:
		fmt.Fprintln(stderr, "nothing to generate: no drift a proposal closes, or the proposals that close it are declared or open already")
	case outFile != "":
		if err := atomicfile.WriteFile(outFile, hcl.Bytes(), 0o644); err != nil {
			return fmt.Errorf("plan --generate: write %s: %w", outFile, err)
		}
		report.File = outFile
		fmt.Fprintf(stderr, "wrote %d proposal(s) to %s; review them, append them to %s, then alp apply each in order\n", len(res.Proposals), outFile, g.configPath)
	case output != "json":
		_, err = stdout.Write(hcl.Bytes())
		return err
	}
	if output == "json" {
		return writeJSON(stdout, report)
	}
	return nil
}

// topologyNodes are the nodes whose health and place plan --generate
// weighs: every declared node, and every member of a declared subnet.
func topologyNodes(res *config.Resources, snap *reconcile.Live) []string {
	var ids []string
	for _, n := range res.Nodes {
		ids = append(ids, n.ID)
	}
	for _, s := range res.Subnets {
		ids = append(ids, snap.Subnets[s.ID].Members...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// reconcileFailedReads is what reconcile would refuse to run on.
func reconcileFailedReads(res *config.Resources, snap *reconcile.Live) string {
	r := reconcile.Reconcile(res, snap)
	if r.Ran() {
		return ""
	}
	return fmt.Sprint(r.FailedReads)
}

// operatorNodesOfDecommissioned lists the nodes each decommissioned
// operator still owns, which reconcile does not read: remove_node_operators
// waits for them.
func operatorNodesOfDecommissioned(ctx context.Context, reg reconcile.Registry, explorer reconcile.Explorer, res *config.Resources, snap *reconcile.Live) {
	lister, fromRegistry := reg.(reconcile.NodeLister)
	for _, o := range res.NodeOperators {
		if !o.Decommissioned || !snap.Operators[o.ID].Found {
			continue
		}
		var on reconcile.OperatorNodes
		if fromRegistry {
			ids, err := lister.OperatorNodes(ctx, o.ID)
			on = reconcile.OperatorNodes{Nodes: ids, FromRegistry: true}
			if err != nil {
				on.Err = err.Error()
			}
		} else {
			ids, err := explorer.OperatorNodes(ctx, o.ID)
			on = reconcile.OperatorNodes{Nodes: ids}
			if err != nil {
				on.Err = err.Error()
			}
		}
		snap.OperatorNodes[o.ID] = on
	}
}

// openProposals lists the open and adopted proposals, newest first, and
// reads again each whose payload list_proposals left out.
func openProposals(ctx context.Context, gov nns.GovernanceClient) ([]nns.ProposalInfo, error) {
	omit := false
	req := nns.ListProposalInfo{Limit: 100, OmitLargeFields: &omit, IncludeRewardStatus: []int32{}, ExcludeTopic: []int32{},
		IncludeStatus: []int32{int32(nns.StatusOpen), int32(nns.StatusAdopted)}}
	var out []nns.ProposalInfo
	for range openProposalPages {
		page, err := gov.ListProposals(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("list the open proposals: %w", err)
		}
		for _, info := range page {
			if a := info.Proposal; a != nil && a.Action != nil && a.Action.ExecuteNnsFunction != nil && len(a.Action.ExecuteNnsFunction.Payload) == 0 && info.ID != nil {
				full, err := gov.GetProposalInfo(ctx, info.ID.ID)
				if err != nil {
					return nil, fmt.Errorf("read open proposal %d: %w", info.ID.ID, err)
				}
				if full != nil {
					info = *full
				}
			}
			out = append(out, info)
		}
		if len(page) < 100 || page[len(page)-1].ID == nil {
			break
		}
		req.BeforeProposal = page[len(page)-1].ID
	}
	return out, nil
}

// checkGenerated loads the declared proposals with the generated blocks
// after them, as they will be once appended, and builds each generated
// one: a block that would not load or encode is a bug, never a file.
// It returns each generated proposal's payload sha256, and the
// configuration they were loaded in.
func checkGenerated(configPath string, ps []*generate.Proposal, lim config.Limits) (map[string]string, *config.Config, error) {
	out := map[string]string{}
	if len(ps) == 0 {
		return out, nil, nil
	}
	var hcl bytes.Buffer
	if err := generate.WriteHCL(&hcl, ps); err != nil {
		return nil, nil, err
	}
	declared, err := os.ReadFile(configPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(configPath), ".alp-generate-*.hcl")
	if err != nil {
		return nil, nil, fmt.Errorf("plan --generate: check the blocks: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(append(append(declared, '\n'), hcl.Bytes()...))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, nil, fmt.Errorf("plan --generate: check the blocks: %w", werr)
	}
	cfg, err := config.LoadWith(tmp.Name(), lim)
	if err != nil {
		return nil, nil, fmt.Errorf("plan --generate: the generated blocks do not load (a bug in alp): %w", err)
	}
	for _, p := range ps {
		b, err := proposal.Build(cfg.Proposal(p.Name))
		if err != nil {
			return nil, nil, fmt.Errorf("plan --generate: the generated proposal %q does not build (a bug in alp): %w", p.Name, err)
		}
		out[p.Name] = b.PayloadSHA256
	}
	return out, cfg, nil
}

// preflightGenerated runs preflight on each generated proposal that waits
// on none (the others can pass only once those before them executed): a
// refused one or a no-op is returned with why, to be dropped; a flagged
// one stays, with a note that apply will need --force.
func preflightGenerated(ctx context.Context, f *preflight.Fetcher, cfg *config.Config, ps []*generate.Proposal) (refused map[string]string, notes []string, err error) {
	refused = map[string]string{}
	for _, p := range ps {
		if len(p.After) > 0 {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, planTimeout)
		r, err := f.Run(pctx, cfg.Proposal(p.Name), preflight.Options{Names: preflight.NamesOf(&cfg.Resources), Minimums: preflight.MinimumsOf(&cfg.Resources)})
		cancel()
		if err != nil {
			return nil, nil, fmt.Errorf("plan --generate: preflight %s: %w", p.Name, err)
		}
		switch r.Verdict {
		case preflight.VerdictRefused:
			refused[p.Name] = worstCheck(r, preflight.Refused)
		case preflight.VerdictNoOp:
			refused[p.Name] = "it would change nothing"
		case preflight.VerdictFlagged:
			notes = append(notes, fmt.Sprintf("preflight flags %s (%s): review it; alp apply needs --force for it", p.Name, worstCheck(r, preflight.Flagged)))
		}
	}
	return refused, notes, nil
}

func worstCheck(r preflight.Report, s preflight.Severity) string {
	for _, c := range r.Checks {
		if c.Severity == s {
			return c.Message
		}
	}
	return string(r.Verdict)
}
