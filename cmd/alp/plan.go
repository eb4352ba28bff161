package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/planfile"
	"alpnib.dev/alpage/preflight"
	"alpnib.dev/alpage/state"
	"alpnib.dev/internal/term"
)

// planTimeout bounds the live reads of one proposal's preflight.
const planTimeout = 2 * time.Minute

func newPlanCmd(g *globals) *cobra.Command {
	var (
		output  string
		outFile string
		force   bool
		gen     bool
		live    liveFlags
	)
	cmd := &cobra.Command{
		Use:   "plan [name…]",
		Short: "Check declared proposals against live state before submitting them",
		Long: `plan runs the preflight of each named proposal (default: every declared one
state.json has not recorded) against the live registry, governance, the
registry explorer and the ICP dashboard, and prints what each would change
and anything that would make the NNS reject it or regret it. Facts from the
explorer and the dashboard are labelled as such.

--out FILE (also spelled -out) saves the plan: per proposal the payload
sha256 and the registry version it was checked against; alp apply FILE
refuses when either has moved since.

` + wrap(`--generate writes the proposals that close the drift between the declared resources and the live registry, as proposal blocks, to --out FILE (else stdout): `+generatedKinds()+`. They come in the order they must execute (a comment names what each waits on), titled and summarized as DFINITY's operators write them, with url left for the forum thread. Each one that waits on none is preflighted: one preflight refuses, or a no-op, is left out with a note, and so is what waits on it. Drift no proposal closes (a region, a chip id, a subnet type) is a note on stderr. Drift a declared proposal not yet executed, or an open one in governance, already closes is not generated again. A proposal that would undo one state.json records as executed or under way is never generated: the declaration is stale, and a note names its line and what to declare. Review the blocks, append them to proposals.hcl, and alp apply each.`, 78) + `

Exit status 2 when any proposal is not ready (a no-op, flagged or refused),
1 on error; with --generate, 0 unless it failed. 2 does not mean "there are
changes" as terraform plan -detailed-exitcode's does: a plan whose every
proposal is ready to submit exits 0, so CI can gate apply on it.`,
		// -out is Terraform's spelling (parseFlags).
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if help, err := parseFlags(cmd, args); help || err != nil {
				return err
			}
			if err := checkOutput(output); err != nil {
				return err
			}
			if gen {
				if len(cmd.Flags().Args()) > 0 || force {
					return fmt.Errorf("plan --generate takes no proposal names and no --force")
				}
				return runGenerate(cmd, g, live, outFile, output)
			}
			cfg, st, err := g.load()
			if err != nil {
				return err
			}
			decls, err := planTargets(cfg, st, cmd.Flags().Args())
			if err != nil {
				return err
			}
			stdout := cmd.OutOrStdout()
			if len(decls) == 0 {
				if output == "json" {
					return writeJSON(stdout, planJSON{Proposals: []preflight.Report{}})
				}
				msg := "nothing to plan: state.json records every declared proposal (name one to plan it anyway)"
				if len(cfg.Proposals) == 0 {
					msg = "nothing to plan: " + g.configPath + " declares no proposal"
				}
				_, err := fmt.Fprintln(stdout, msg)
				return err
			}
			f, network, err := g.preflightFetcher(cmd.Context(), cfg, live, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if err := g.bindState(st, network); err != nil {
				return err
			}
			host := network.Host
			closeCopy, err := planFromCopy(cmd.Context(), f, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer closeCopy()
			var reports []preflight.Report
			for _, d := range decls {
				fmt.Fprintf(cmd.ErrOrStderr(), "checking %s against %s…\n", d.Name, host)
				ctx, cancel := context.WithTimeout(cmd.Context(), planTimeout)
				r, err := f.Run(ctx, d, preflight.Options{Force: force, Names: preflight.NamesOf(&cfg.Resources), Minimums: preflight.MinimumsOf(&cfg.Resources)})
				cancel()
				if err != nil {
					return err
				}
				reports = append(reports, withDeclared(withURLCheck(r, d), d, &cfg.Resources))
			}
			if outFile != "" {
				if err := planfile.Write(outFile, planFileOf(host, reports, time.Now().UTC())); err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "plan saved to %s; apply it with alp apply %s\n", outFile, outFile)
			}
			if output == "json" {
				err = writeJSON(stdout, planJSON{Proposals: reports})
			} else {
				err = renderSafe(stdout, func(w io.Writer, paint term.Painter) error { return renderPlan(w, paint, reports) })
			}
			if err != nil {
				return err
			}
			if n := countNotReady(reports); n > 0 {
				return flagged("%d proposal(s) not ready: a no-op, flagged or refused by preflight", n)
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&outFile, "out", "", "save the plan (payload sha256 and registry version per proposal) for alp apply; with --generate, the file the proposal blocks go to")
	cmd.Flags().BoolVar(&gen, "generate", false, "write the proposal blocks that close the drift between the declared resources and the live registry")
	cmd.Flags().BoolVar(&force, "force", false, "treat an unelected deploy_guestos version as a warning instead of refusing it")
	live.register(cmd)
	return cmd
}

// planTargets picks the proposals to plan: the named ones, in the order
// named, or every declared one state.json has no record of.
func planTargets(cfg *config.Config, st *state.State, names []string) ([]*config.Proposal, error) {
	if len(names) == 0 {
		var out []*config.Proposal
		for _, p := range cfg.Proposals {
			if st.Proposals[p.Name] == nil {
				out = append(out, p)
			}
		}
		return out, nil
	}
	var out []*config.Proposal
	var unknown []string
	for _, n := range names {
		p := cfg.Proposal(n)
		if p == nil {
			unknown = append(unknown, n)
			continue
		}
		out = append(out, p)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("no proposal named %s is declared in %s", strings.Join(unknown, ", "), cfg.ProposalsFile)
	}
	return out, nil
}

// planJSON is `alp plan --output json`.
type planJSON struct {
	Proposals []preflight.Report `json:"proposals"`
}

func planFileOf(host string, reports []preflight.Report, now time.Time) *planfile.File {
	f := &planfile.File{CreatedAt: now, Host: host}
	for _, r := range reports {
		f.Proposals = append(f.Proposals, planfile.Entry{Name: r.Name, Kind: r.Kind, PayloadSHA256: r.PayloadSHA256, RegistryVersion: r.RegistryVersion, Verdict: string(r.Verdict)})
	}
	return f
}

// countNotReady counts the proposals a CI gate should stop on: flagged and
// refused ones, and no-ops too, since submitting a proposal that changes
// nothing spends a neuron's reputation on nothing (apply refuses it
// without --force).
func countNotReady(reports []preflight.Report) int {
	n := 0
	for _, r := range reports {
		if r.Verdict != preflight.VerdictReady {
			n++
		}
	}
	return n
}

func renderPlan(w io.Writer, paint term.Painter, reports []preflight.Report) error {
	counts := map[preflight.Verdict]int{}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(w)
		}
		r.Render(w, paint)
		counts[r.Verdict]++
	}
	var parts []string
	for _, v := range []preflight.Verdict{preflight.VerdictReady, preflight.VerdictNoOp, preflight.VerdictFlagged, preflight.VerdictRefused} {
		if counts[v] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[v], paint.Paint(preflight.Color(string(v)), string(v))))
		}
	}
	_, err := fmt.Fprintf(w, "\nplan: %d proposal(s): %s\n", len(reports), strings.Join(parts, ", "))
	return err
}

// generatedKinds lists, from the table of kinds, each kind --generate
// proposes and for what drift.
func generatedKinds() string {
	var out []string
	for _, k := range kinds.All {
		if g := k.Docs()[0].Generates; g != "" {
			out = append(out, k.Name()+" "+g)
		}
	}
	return strings.Join(out, "; ")
}

// wrap breaks text into lines of at most width columns, at spaces.
func wrap(text string, width int) string {
	var b strings.Builder
	line := 0
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case line+1+len([]rune(w)) > width:
			b.WriteByte('\n')
			line = 0
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len([]rune(w))
	}
	return b.String()
}
