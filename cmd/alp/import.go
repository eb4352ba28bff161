package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/readback"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
	"alpnib.dev/internal/term"
)

// importTimeout bounds reading the proposal back.
const importTimeout = time.Minute

func newImportCmd(g *globals) *cobra.Command {
	var (
		dashboardURL, output string
		force                bool
	)
	cmd := &cobra.Command{
		Use:   "import <name> <proposal_id>",
		Short: "Record an already submitted proposal in state.json (like terraform import)",
		Long: `import adopts a proposal submitted by other means (or by an apply whose state
write failed) into state.json under a declared proposal name. It reads the
proposal from governance (get_proposal_info) for its proposer neuron, status and
timestamps — from the ICP dashboard when governance has purged it — and records
the sha256 of the payload the config declares now, built as apply builds it (an
update_subnet's inherited parts from the live subnet record, at the registry
version read once), warning when the payload on-chain differs. It refuses proposal id 0, a name already recorded, and a name
the config does not declare.

The proposal's action must be what the declared kind makes (governance's
action, or the dashboard's action type and NNS function): a mismatch is
refused (exit 2) unless --force, and state.json records that it was forced.
An action or payload that cannot be compared (the dashboard gives no payload
bytes) is recorded as uncompared, saying why.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			name := args[0]
			id, err := strconv.ParseUint(args[1], 10, 64)
			if err != nil {
				return fmt.Errorf("proposal id %q is not a number", args[1])
			}
			if id == 0 {
				return errors.New("proposal id 0 is not a proposal")
			}
			cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			decl := cfg.Proposal(name)
			if decl == nil {
				return fmt.Errorf("proposal %q is not declared in %s; declare it first (import records a declared proposal)", name, g.configPath)
			}
			st, err := g.loadState()
			if err != nil {
				return err
			}
			if prev := st.Proposals[name]; prev != nil {
				return fmt.Errorf("proposal %q is already recorded as proposal %d; remove that entry from %s first if it is wrong", name, prev.ProposalID, g.stateFile())
			}
			ag, network, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := g.bindState(st, network); err != nil {
				return err
			}
			host := network.Host
			ctx, cancel := context.WithTimeout(cmd.Context(), importTimeout)
			defer cancel()
			// The payload is built as apply builds it: its live parts
			// (update_subnet's) from the record at the version read.
			reg, err := pinLatest(ctx, nns.RegistryClient{Caller: ag})
			if err != nil {
				return err
			}
			p, err := buildAgainstLive(ctx, reg, decl, nil)
			if err != nil {
				return err
			}
			dash := liveFlags{dashboardURL: dashboardURL}.dashboard()
			o, err := readback.Read(ctx, nns.GovernanceClient{Caller: ag}, dash, id)
			if err != nil {
				return err
			}
			if o.Source == readback.FromNowhere {
				return fmt.Errorf("proposal %d: neither governance at %s nor the ICP dashboard knows it", id, host)
			}
			stderr := cmd.ErrOrStderr()
			cmp := readback.Compare(p, o)
			if cmp.KindMismatch != "" && !force {
				return &exitError{code: 2, err: fmt.Errorf("%s; import it under a name declared with that kind, or give --force to record it anyway (state.json then says it was forced)", cmp.KindMismatch)}
			}
			var warnings []string
			for _, w := range []string{cmp.KindMismatch, cmp.PayloadDiffers, cmp.Uncompared} {
				if w != "" {
					warnings = append(warnings, w)
					fmt.Fprintln(stderr, term.For(stderr).Paint(term.Yellow, "warning: ")+term.Sanitize(w, false))
				}
			}
			entry := &state.Proposal{Kind: string(p.Kind), ProposalID: id, PayloadSHA256: p.PayloadSHA256, DeclaredSHA256: p.DeclaredToRecord(), Neuron: o.Proposer,
				Host: host, Status: o.Status, Forced: cmp.KindMismatch, Uncompared: cmp.Uncompared}
			if !o.SubmittedAt.IsZero() {
				entry.SubmittedAt = state.TimeOf(o.SubmittedAt)
			}
			if o.ResolvedAt != nil {
				entry.ResolvedAt = state.TimeOf(*o.ResolvedAt)
			}
			// Record into the file as it is now, under the lock: an apply
			// may have recorded something while the proposal was read.
			if err := g.updateState(network, func(now *state.State) (bool, error) {
				return true, now.Import(name, entry)
			}); err != nil {
				return err
			}
			if output == "json" {
				if warnings == nil {
					warnings = []string{}
				}
				return writeJSON(cmd.OutOrStdout(), importJSON{Name: name, ProposalID: id, Kind: string(p.Kind), PayloadSHA256: p.PayloadSHA256,
					Status: o.Word(), Source: o.Source, Neuron: o.Proposer, Host: host, Warnings: warnings})
			}
			from := ""
			if o.Source == readback.FromDashboard {
				from = " " + readback.DashboardLabel
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported proposal %d as %q (%s, %s)%s\n", id, name, p.Kind, o.Word(), from)
			return nil
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&dashboardURL, "dashboard-url", "", "ICP dashboard (third party), asked when governance has purged the proposal: flag > $"+source.DashboardURLEnv+" > "+source.MainnetDashboardURL)
	cmd.Flags().BoolVar(&force, "force", false, "record a proposal whose action is not what the declared kind makes (state.json records it was forced)")
	return cmd
}

// importJSON is `alp import --output json`: what was recorded, where it was
// read from, and the warnings also printed on stderr.
type importJSON struct {
	Name          string          `json:"name"`
	ProposalID    uint64          `json:"proposal_id"`
	Kind          string          `json:"kind"`
	PayloadSHA256 string          `json:"payload_sha256"`
	Status        string          `json:"status"`
	Source        readback.Source `json:"source"`
	Neuron        uint64          `json:"neuron"`
	Host          string          `json:"host"`
	Warnings      []string        `json:"warnings"`
}
