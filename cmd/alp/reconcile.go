package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/reconcile"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

// reconcileTimeout bounds the whole of reconcile's live reads.
const reconcileTimeout = 5 * time.Minute

func newReconcileCmd(g *globals) *cobra.Command {
	var (
		output       string
		refreshChips bool
		strict       bool
		all          bool
		kdsURL       string
		nodeCA       string
		live         liveFlags
		nodes        nodeStatusFlags
	)
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Diff the declared fleet against live state (read-only; the CI gate)",
		Long: `reconcile compares everything resources.hcl declares with the live NNS (it
needs no proposals.hcl: without one, resources.hcl and resources/*.hcl beside
the --config path are read alone) and prints one report: per declared subnet its membership and record facts (and,
for a subnet without a subnet block that a node block names or that lists a
declared node, whether those nodes are where their blocks say), node
providers and operators, the nodes of each operator, chip ids (vouched for by
AMD KDS), and the GuestOS version each node runs (read from the node itself
over IPv6, else from the ICP dashboard, marked "via dashboard").

Registry facts are read from a certified local copy of the registry, kept
in $XDG_CACHE_HOME/alp/registry/<root key hash>/ and brought up to date with
get_certified_changes_since (every reply verified under the root key) before
the report; all of them at the copy's version, which the report prints. The
nodes of each operator come from the node records there. When the copy
cannot be brought up to date, the registry canister is read directly and the
explorer lists each operator's nodes, with a warning. Node versions are read
--parallel at a time, each connect bounded by --connect-timeout.

Facts from third parties are labelled. What a third party (AMD KDS, the
dashboard, a node's own status endpoint, the registry explorer) could not say
is reported as unknown or unreachable, counted per source in the summary, and
never counts as drift unless --strict is given. A failed registry or
governance read is different: without the NNS's own word there is nothing to
compare, so the gate did not run and reconcile exits 1 naming the reads that
failed. It changes nothing on-chain; it records positive KDS verdicts in
state.json (chips), which are not asked again unless --refresh-chips is given.

By default the text report prints, per section, how many rows it holds and
how many are in sync, then only the rows that are drift, unknown or
unreachable; version drift that repeats is one line per declared and live
version pair, naming the subnets; a warning said more than once is said once
with a count. --all prints every row; --output json is always complete.

Exit status 0 when in sync, 2 on any drift (after the whole report) or, with
--strict, on any unknown; 1 on error, a failed registry or governance read
included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := nodes.check(); err != nil {
				return err
			}
			cfg, err := g.loadResourcesConfig(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			st, err := g.loadState()
			if err != nil {
				return err
			}
			a, network, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := g.bindState(st, network); err != nil {
				return err
			}
			host := network.Host
			ns, err := source.NewNodeStatusTimeout(firstOf(nodeCA, os.Getenv(source.NodeStatusCAEnv)), nodes.connect)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "reconciling %d node(s) against %s…\n", len(cfg.Nodes), host)
			ctx, cancel := context.WithTimeout(cmd.Context(), reconcileTimeout)
			defer cancel()
			reg, closeReg, err := reconcileRegistry(ctx, a, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeReg()
			f := &reconcile.Fetcher{
				Registry:        reg,
				Governance:      nns.GovernanceClient{Caller: a},
				Explorer:        live.explorer(),
				Dashboard:       live.dashboard(),
				KDS:             source.NewKDS(source.URL(kdsURL, source.KDSURLEnv, source.MainnetKDSURL), nil),
				NodeStatus:      ns,
				VersionParallel: nodes.parallel,
			}
			snap, err := f.Fetch(ctx, &cfg.Resources, st.Chips, refreshChips)
			if err != nil {
				return fmt.Errorf("reconcile: %w", err)
			}
			report := reconcile.Reconcile(&cfg.Resources, snap)
			report.QueriesUnverified = g.noVerifyQueries
			// The verdicts go into state.json as it is now, under its lock:
			// an apply that recorded a proposal meanwhile keeps its entry.
			// Nothing new to record (the usual run) takes no lock at all.
			now, recorded := time.Now(), false
			if reconcile.UpdateChips(st, snap.Chips, now) {
				err = g.updateState(network, func(s *state.State) (bool, error) {
					recorded = reconcile.UpdateChips(s, snap.Chips, now)
					return recorded, nil
				})
				if err != nil {
					// Not fatal: the report stands, and the chips are
					// asked again next time.
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: AMD KDS verdicts not recorded: %v\n", err)
				}
			}
			if recorded {
				fmt.Fprintf(cmd.ErrOrStderr(), "recorded AMD KDS verdicts in %s\n", g.stateFile())
			}
			stdout := cmd.OutOrStdout()
			if output == "json" {
				err = writeJSON(stdout, report)
			} else if all {
				err = renderSafe(stdout, report.Render)
			} else {
				err = renderSafe(stdout, report.RenderBrief)
			}
			if err != nil {
				return err
			}
			switch {
			case !report.Ran():
				return fmt.Errorf("reconcile did not run: %d registry or governance read(s) failed: %s", len(report.FailedReads), strings.Join(report.FailedReads, "; "))
			case !report.InSync():
				return flagged("%d row(s) drifted from the declared fleet", report.Drift)
			case strict && report.Unknown > 0:
				return flagged("%d row(s) unknown, which --strict fails", report.Unknown)
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&refreshChips, "refresh-chips", false, "ask AMD KDS again about chips state.json already records as verified")
	cmd.Flags().BoolVar(&all, "all", false, "print every row, in sync or not (by default: a count per section, the rows that need a look, repeated version drift rolled up per declared and live pair)")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 2 when any row is unknown or unreachable (a third party did not answer), not only on drift")
	cmd.Flags().StringVar(&kdsURL, "kds-url", "", "AMD KDS (third party): flag > $"+source.KDSURLEnv+" > "+source.MainnetKDSURL)
	cmd.Flags().StringVar(&nodeCA, "node-status-ca", "", "PEM certificates node status endpoints must chain to: flag > $"+source.NodeStatusCAEnv+" > unchecked (replicas self-sign)")
	live.register(cmd)
	nodes.register(cmd)
	return cmd
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
