package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/state"
	"alpnib.dev/internal/atomicfile"
)

func newStateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "Read and edit state.json by hand (offline, like terraform state)",
		Long: `state lists, shows and removes the proposals state.json records, as terraform
state list, show and rm do. It reads nothing from the network. The state file is
--state, else state.json in the folder of --config.`,
	}
	cmd.AddCommand(newStateListCmd(g), newStateShowCmd(g), newStateRmCmd(g))
	return cmd
}

func newStateListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the proposal names state.json records, one a line, sorted",
		Long: `list prints the name of each proposal state.json records, one a line, sorted.
Exit status: 0, or 1 when state.json cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := g.loadState()
			if err != nil {
				return err
			}
			for _, name := range recordedNames(st) {
				fmt.Fprintln(cmd.OutOrStdout(), name)
			}
			return nil
		},
	}
}

func newStateShowCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Print one recorded proposal as state.json holds it",
		Long: `show prints the record of proposal NAME as state.json holds it (JSON, fields alp
does not know included). Exit status: 0, or 1 when NAME is not recorded.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.loadState()
			if err != nil {
				return err
			}
			p, err := recorded(g.stateFile(), st, args[0])
			if err != nil {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), p)
		},
	}
}

func newStateRmCmd(g *globals) *cobra.Command {
	var autoApprove bool
	cmd := &cobra.Command{
		Use:   "rm NAME...",
		Short: "Forget recorded proposals: state.json no longer records them (asks first)",
		Long: `rm removes the records of the named proposals from state.json, as terraform
state rm does; the proposals themselves, on the NNS, are untouched, and alp import
can record one again. Each name must be recorded, or nothing is removed. rm shows
what it removes and asks to type remove, as apply asks to type submit; in CI,
-auto-approve removes without asking. The file as it was is kept beside it as
state.json.backup, and the new one is written atomically under the state lock.

Exit status: 0 removed, 1 error (a name not recorded, no answer): nothing removed.`,
		// -auto-approve is Terraform's spelling (parseFlags).
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if help, err := parseFlags(cmd, args); help || err != nil {
				return err
			}
			names := cmd.Flags().Args()
			if len(names) == 0 {
				return errors.New("state rm needs the name of each proposal to forget (alp state list shows them); nothing was removed")
			}
			return stateRm(cmd.Context(), cmd, g.stateFile(), names, autoApprove)
		},
	}
	cmd.Flags().BoolVar(&autoApprove, "auto-approve", false, "remove without asking to type remove, for CI (also -auto-approve)")
	return cmd
}

func recordedNames(st *state.State) []string {
	names := make([]string, 0, len(st.Proposals))
	for name := range st.Proposals {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// recorded is st's record of name, or an error that names the file and
// what it does record.
func recorded(path string, st *state.State, name string) (*state.Proposal, error) {
	if p := st.Proposals[name]; p != nil {
		return p, nil
	}
	names := recordedNames(st)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s records no proposal %q: it records none", path, name)
	}
	return nil, fmt.Errorf("%s records no proposal %q; it records: %s", path, name, strings.Join(names, ", "))
}

// stateRm removes names from the state at path under its lock, after the
// typed confirmation unless auto, keeping the old file as path.backup.
func stateRm(ctx context.Context, cmd *cobra.Command, path string, names []string, auto bool) error {
	return state.Update(path, func(st *state.State) (bool, error) {
		out := cmd.ErrOrStderr()
		for _, name := range names {
			if _, err := recorded(path, st, name); err != nil {
				return false, fmt.Errorf("%w; nothing was removed", err)
			}
		}
		fmt.Fprintf(out, "state rm forgets %d proposal(s) recorded in %s (the proposals on the NNS stay as they are):\n", len(names), path)
		for _, name := range names {
			p := st.Proposals[name]
			status := string(p.Status)
			if status == "" {
				status = "status unknown"
			}
			fmt.Fprintf(out, "  %s: %s proposal %d, %s\n", name, p.Kind, p.ProposalID, status)
		}
		if auto {
			fmt.Fprintln(out, "approved by --auto-approve: removing")
		} else if err := askWord(ctx, cmd.InOrStdin(), out, "remove"); err != nil {
			return false, fmt.Errorf("%w; nothing was removed", err)
		}
		old, err := os.ReadFile(path)
		if err != nil {
			return false, fmt.Errorf("read %s for its backup: %w", path, err)
		}
		mode := os.FileMode(0o644)
		if fi, err := os.Stat(path); err == nil {
			mode = fi.Mode().Perm()
		}
		if err := atomicfile.WriteFile(path+".backup", old, mode); err != nil {
			return false, fmt.Errorf("keep the backup of %s: %w; nothing was removed", path, err)
		}
		for _, name := range names {
			delete(st.Proposals, name)
		}
		fmt.Fprintf(out, "removed; the file as it was is %s.backup\n", path)
		return true, nil
	})
}

// askWord asks on prompt to type word and reads one line of in; anything
// else, no answer or a cancelled ctx is an error.
func askWord(ctx context.Context, in io.Reader, prompt io.Writer, word string) error {
	fmt.Fprintf(prompt, "Type %s to confirm: ", word)
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(in).ReadString('\n')
		got <- line
	}()
	var line string
	select {
	case line = <-got:
	case <-ctx.Done():
		fmt.Fprintln(prompt)
		return fmt.Errorf("aborted at the prompt: %w", context.Cause(ctx))
	}
	fmt.Fprintln(prompt)
	if line == "" {
		return fmt.Errorf("aborted: no answer (stdin is closed or not a terminal); type %s at the prompt, or, in CI, give -auto-approve", word)
	}
	if typed := strings.TrimSpace(line); typed != word {
		return fmt.Errorf("aborted: you typed %q, not %s", typed, word)
	}
	return nil
}
