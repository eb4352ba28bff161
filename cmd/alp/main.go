// Command alp manages an Internet Computer node fleet declared in HCL: it
// checks each declared change against live state, submits it as an NNS
// proposal and records the result in state.json.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/term"
	"alpnib.dev/internal/version"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes alp with args and returns the process exit code:
// 0 fine, 1 error, 2 flagged (drift, a flagged plan).
//
// An interrupt or SIGTERM cancels the command's context instead of killing
// the process, so a command holding the state lock releases it on the way
// out; a second interrupt kills as usual.
func run(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the next signal takes the default action
	}()
	return runRoot(ctx, newRootCmd(), args, os.Stderr)
}

// runRoot runs root with args and returns the exit code. A panic in the
// command is a bug in alp, reported as an internal error with its stack,
// and exits 1: Go's own exit status for a panic is 2, which alp's callers
// read as "flagged" (drift, a refused plan), so a crash in a CI gate would
// pass for a finding. The command's deferred cleanups (the state lock) run
// before it is recovered.
func runRoot(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "alp: internal error: %s\nThis is a bug in alp; please report it with what follows.\n%s",
				term.Sanitize(fmt.Sprint(p), false), debug.Stack())
			code = 1
		}
	}()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "alp:", term.Sanitize(err.Error(), false))
		return exitCode(err)
	}
	return 0
}

// exitError carries an exit code other than 1 up to run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "alp",
		Short: "Declarative node-fleet management for the Internet Computer",
		Long: `alp turns the node fleet you declare in HCL (resources.hcl, proposals.hcl) into
NNS proposals: it checks each change against live state, dry-runs it on a local
NNS, submits it with your neuron and records the result in state.json.

Exit status, the same in every command (its help says what it means there):
  0  done, nothing flagged
  1  error (the message says what and where)
  2  flagged, after the whole report: plan, a proposal is not ready (a no-op,
     flagged or refused), not "there are changes" as in terraform plan
     -detailed-exitcode; list and reconcile, drift; apply, a check stopped it
  3  apply: the proposal WAS submitted but state.json could not be written;
     fmt -check: a file is not formatted`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	g := &globals{}
	g.register(root)
	version.Attach(root)
	root.AddCommand(newListCmd(g))
	root.AddCommand(newKeygenCmd())
	root.AddCommand(newDevnetCmd())
	root.AddCommand(newApplyCmd(g))
	root.AddCommand(newImportCmd(g))
	root.AddCommand(newStatusCmd(g))
	root.AddCommand(newPlanCmd(g))
	root.AddCommand(newRegistryCmd(g))
	root.AddCommand(newGuestosCmd(g))
	root.AddCommand(newReconcileCmd(g))
	root.AddCommand(newFmtCmd(g))
	root.AddCommand(newValidateCmd(g))
	root.AddCommand(newStateCmd(g))
	return root
}
