package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/generate"
	"alpnib.dev/alpage/readback"
	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
	"alpnib.dev/internal/term"
)

// statusTimeout bounds the whole read-back.
const statusTimeout = 2 * time.Minute

func newStatusCmd(g *globals) *cobra.Command {
	var output, dashboardURL string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Read each recorded proposal back from governance and record status changes",
		Long: `status reads every proposal recorded in state.json back from governance
(get_proposal_info) and prints its status and vote tally, then a count per status.
A status that moved forward is recorded in state.json (statuses only move
forward: a terminal one is never overwritten). When governance has purged a
proposal, the public ICP dashboard is asked instead and the line is marked
` + readback.DashboardLabel + `; a proposal neither knows is unknown.
Exit status 1 when a proposal could not be read (the rest is still printed and
recorded).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, st, err := g.load()
			if err != nil {
				return err
			}
			ag, network, err := g.readAgent(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := g.bindState(st, network); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), statusTimeout)
			defer cancel()
			dash := liveFlags{dashboardURL: dashboardURL}.dashboard()
			rows, readErr := statusRows(ctx, nns.GovernanceClient{Caller: ag}, dash, st, time.Now())
			staleAfter(rows, cfg)
			var recordErr error
			if slices.ContainsFunc(rows, func(r statusRow) bool { return r.Changed }) {
				// The reads took a while: record the changes into the file
				// as it is now, under the lock, so nothing an apply recorded
				// meanwhile is written over.
				recordErr = g.updateState(network, func(now *state.State) (bool, error) {
					changed := false
					for _, r := range rows {
						if r.Changed && now.Observe(r.Name, state.Status(r.Status), r.at) {
							changed = true
						}
					}
					return changed, nil
				})
				if recordErr != nil {
					recordErr = fmt.Errorf("status changes were not recorded in %s: %w", g.stateFile(), recordErr)
					for i := range rows {
						rows[i].Changed = false
					}
				}
			}
			if output == "json" {
				err = writeJSON(cmd.OutOrStdout(), rows)
			} else {
				err = renderSafe(cmd.OutOrStdout(), func(w io.Writer, paint term.Painter) error { return renderStatus(w, paint, rows) })
			}
			if err != nil {
				return err
			}
			return errors.Join(readErr, recordErr)
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&dashboardURL, "dashboard-url", "", "ICP dashboard (third party), asked for purged proposals: flag > $"+source.DashboardURLEnv+" > "+source.MainnetDashboardURL)
	return cmd
}

// statusRow is one line of `alp status`, and its JSON form.
type statusRow struct {
	Name       string          `json:"name"`
	ProposalID uint64          `json:"proposal_id"`
	Status     string          `json:"status"`
	Source     readback.Source `json:"source"`
	Tally      *readback.Tally `json:"tally,omitempty"`
	Failure    string          `json:"failure_reason,omitempty"`
	Recorded   state.Status    `json:"previous_status,omitempty"`
	Changed    bool            `json:"changed"`
	Error      string          `json:"error,omitempty"`
	// Stale is what the declared resources say that this executed
	// proposal made untrue, each with its line and what to declare.
	Stale []string `json:"resources_stale,omitempty"`
	// at is when the observed status took effect, for recording it.
	at time.Time
}

// statusRows reads every recorded proposal back and records what moved in
// st. The error reports the proposals that could not be read.
func statusRows(ctx context.Context, gov readback.Governance, dash readback.Dashboard, st *state.State, now time.Time) ([]statusRow, error) {
	names := make([]string, 0, len(st.Proposals))
	for name := range st.Proposals {
		names = append(names, name)
	}
	slices.Sort(names)
	ids := make([]uint64, len(names))
	for i, n := range names {
		ids[i] = st.Proposals[n].ProposalID
	}
	obs, errs := readback.ReadAll(ctx, gov, dash, ids, 8)
	rows := make([]statusRow, len(names))
	var failed []string
	for i, name := range names {
		rec := st.Proposals[name]
		r := statusRow{Name: name, ProposalID: rec.ProposalID, Recorded: rec.Status}
		if errs[i] != nil {
			r.Status, r.Source, r.Error = "error", readback.FromNowhere, errs[i].Error()
			failed = append(failed, name)
			rows[i] = r
			continue
		}
		o := obs[i]
		r.Status, r.Source, r.Tally, r.Failure = o.Word(), o.Source, o.Tally, o.FailureReason
		at := now
		if o.ResolvedAt != nil {
			at = *o.ResolvedAt
		}
		r.Changed, r.at = st.Observe(name, o.Status, at), at
		rows[i] = r
	}
	if len(failed) > 0 {
		return rows, fmt.Errorf("could not read %d proposal(s): %s", len(failed), strings.Join(failed, ", "))
	}
	return rows, nil
}

func statusColor(s string) term.Color {
	switch state.Status(s) {
	case state.StatusExecuted:
		return term.Green
	case state.StatusOpen, state.StatusAdopted:
		return term.Yellow
	case state.StatusRejected, state.StatusFailed:
		return term.Red
	}
	if s == "error" {
		return term.Red
	}
	return term.Dim
}

func renderStatus(w io.Writer, paint term.Painter, rows []statusRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no proposal is recorded in state.json")
		return err
	}
	table := [][]term.Cell{{term.PlainCell("NAME"), term.PlainCell("PROPOSAL"), term.PlainCell("STATUS"), term.PlainCell("TALLY"), term.PlainCell("NOTE")}}
	counts := map[string]int{}
	for _, r := range rows {
		counts[r.Status]++
		tally := "-"
		if r.Tally != nil {
			tally = r.Tally.String()
		}
		var notes []string
		if r.Changed {
			from := string(r.Recorded)
			if from == "" {
				from = "none"
			}
			notes = append(notes, "recorded "+from+" → "+r.Status)
		}
		switch {
		case r.Error != "":
			notes = append(notes, r.Error)
		case r.Source == readback.FromDashboard:
			notes = append(notes, readback.DashboardLabel)
		case r.Source == readback.FromNowhere:
			notes = append(notes, "neither governance nor the ICP dashboard knows it")
		}
		if r.Failure != "" {
			notes = append(notes, "failure: "+r.Failure)
		}
		table = append(table, []term.Cell{term.PlainCell(term.Printable(r.Name)), term.PlainCell(fmt.Sprint(r.ProposalID)), {Text: r.Status, Color: statusColor(r.Status)},
			term.PlainCell(tally), term.PlainCell(term.Printable(strings.Join(notes, "; ")))})
	}
	if err := term.WriteTable(w, paint, table); err != nil {
		return err
	}
	var parts []string
	for _, s := range []string{"open", "adopted", "executed", "rejected", "failed", readback.Unknown, "error"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	if _, err := fmt.Fprintf(w, "%d proposal(s): %s\n", len(rows), strings.Join(parts, ", ")); err != nil {
		return err
	}
	for _, r := range rows {
		if len(r.Stale) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s executed, so the declared fleet now drifts from the registry until it says so:\n", term.Printable(r.Name))
		for _, s := range r.Stale {
			if _, err := fmt.Fprintf(w, "  %s\n", term.Printable(s)); err != nil {
				return err
			}
		}
	}
	return nil
}

// staleAfter notes, on each executed proposal's row, the declared
// resources it made drift (the declaration is the one to change, not the
// registry: plan --generate will not undo it).
func staleAfter(rows []statusRow, cfg *config.Config) {
	for i, r := range rows {
		if r.Status != string(state.StatusExecuted) {
			continue
		}
		if p := cfg.Proposal(r.Name); p != nil {
			rows[i].Stale = generate.AwayOf(&cfg.Resources, p)
		}
	}
}
