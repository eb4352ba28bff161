package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/internal/term"
)

func newListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show each declared proposal against what state.json recorded (offline)",
		Long: `list loads the configuration and state.json and shows, for each declared
proposal, its kind, the sha256 of the payload the config declares now (of one in
sync, the payload submitted), and
whether it is not submitted, in sync with what was submitted, DRIFT (the
config payload changed since submit, or state.json records another kind for
it), or settled (it changed after the
proposal was executed, rejected or failed: a note, not drift, since the
payload on-chain is immutable). A proposal state.json records under a name
no block declares any more is listed after them as not declared. It reads
nothing from the network: an update_subnet, whose payload inherits parts of the
live subnet record, is held against the hash of what its declaration alone makes
(declared_sha256 in state.json), and a record pinning the hash an earlier alp
encoded the same declaration to is in sync.
Exit status 2 when any proposal drifted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			cfg, st, err := g.load()
			if err != nil {
				return err
			}
			rows, err := listRows(cfg.Proposals, st)
			if err != nil {
				return err
			}
			if output == "json" {
				err = writeJSON(cmd.OutOrStdout(), rows)
			} else {
				err = renderSafe(cmd.OutOrStdout(), func(w io.Writer, paint term.Painter) error { return renderList(w, paint, rows) })
			}
			if err != nil {
				return err
			}
			if n := countDrift(rows); n > 0 {
				return flagged("%d proposal(s) drifted from state.json", n)
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

// listRow is one line of `alp list`, and its JSON form.
type listRow struct {
	Name          string          `json:"name"`
	Kind          string          `json:"kind"`
	PayloadSHA256 string          `json:"payload_sha256"`
	Sync          proposal.Sync   `json:"sync"`
	Note          string          `json:"note,omitempty"`
	State         *state.Proposal `json:"state"`
}

func listRows(decls []*config.Proposal, st *state.State) ([]listRow, error) {
	var rows []listRow
	for _, d := range decls {
		p, err := proposal.Build(d)
		if err != nil {
			return nil, err
		}
		rec := st.Proposals[p.Name]
		sync, note := proposal.Compare(p, rec)
		// In sync, the payload is the one submitted: its hash is the
		// record's (an update_subnet's live parts, or an earlier alp's
		// encoding, make the offline build hash otherwise).
		sum := p.PayloadSHA256
		if sync == proposal.InSync {
			sum = rec.PayloadSHA256
		}
		rows = append(rows, listRow{Name: p.Name, Kind: string(p.Kind), PayloadSHA256: sum, Sync: sync, Note: note, State: rec})
	}
	declared := map[string]bool{}
	for _, d := range decls {
		declared[d.Name] = true
	}
	var undeclared []string
	for name := range st.Proposals {
		if !declared[name] {
			undeclared = append(undeclared, name)
		}
	}
	slices.Sort(undeclared)
	for _, name := range undeclared {
		rec := st.Proposals[name]
		rows = append(rows, listRow{Name: name, Kind: rec.Kind, PayloadSHA256: rec.PayloadSHA256, Sync: proposal.Undeclared,
			Note: "recorded in state.json; no proposal block declares it", State: rec})
	}
	return rows, nil
}

// countDrift counts the rows that drifted from state.json, what list's
// exit status 2 stands for.
func countDrift(rows []listRow) int {
	n := 0
	for _, r := range rows {
		if r.Sync == proposal.Drift {
			n++
		}
	}
	return n
}

func renderList(w io.Writer, paint term.Painter, rows []listRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "no proposal is declared")
		return err
	}
	table := [][]term.Cell{{term.PlainCell("NAME"), term.PlainCell("KIND"), term.PlainCell("PAYLOAD"), term.PlainCell("SYNC"), term.PlainCell("PROPOSAL"), term.PlainCell("STATUS"), term.PlainCell("SUBMITTED")}}
	for _, r := range rows {
		id, status, submitted := "-", "-", "-"
		if r.State != nil {
			id = fmt.Sprint(r.State.ProposalID)
			if r.State.Status != "" {
				status = string(r.State.Status)
			}
			// As recorded: the reference tool let a person write "" or
			// free text here, and it is shown as it was written.
			if r.State.SubmittedAt != "" {
				submitted = string(r.State.SubmittedAt)
			}
		}
		sync := term.Cell{Text: string(r.Sync), Color: r.Sync.Color()}
		if r.Note != "" {
			sync.Rest = " (" + r.Note + ")"
		}
		table = append(table, []term.Cell{term.PlainCell(term.Printable(r.Name)), term.PlainCell(term.Printable(r.Kind)), term.PlainCell(state.ShortHash(term.Printable(r.PayloadSHA256))), sync,
			term.PlainCell(id), term.PlainCell(term.Printable(status)), term.PlainCell(term.Printable(submitted))})
	}
	return term.WriteTable(w, paint, table)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
