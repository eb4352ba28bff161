package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/hostconfig"
)

// installSteps are what install does, in order; later parts of install
// (building the guest image) append theirs here.
func installSteps() []hostconfig.Step {
	return hostconfig.Steps()
}

func newInstallCmd() *cobra.Command {
	var root, binary string
	cmd := &cobra.Command{
		Use:   "install",
		Short: "Prepare this host: configuration, folders, systemd unit",
		Long: `install writes the embedded default configuration when the host has none
(it never overwrites an existing one), lays out the folders the
configuration names, writes the systemd unit, and prints what is left to do.
Running it again changes nothing and says so.

With --root every path is taken under that folder instead of /.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("finding this binary for the unit's ExecStart: %w", err)
				}
				binary = exe
			}
			abs, err := filepath.Abs(root)
			if err != nil {
				return fmt.Errorf("resolving --root: %w", err)
			}
			in := &hostconfig.Install{Root: abs, Binary: binary, ConfigPath: filepath.Join(abs, hostconfig.DefaultPath)}
			if p := os.Getenv(hostconfig.EnvVar); p != "" && !cmd.Flags().Changed("root") {
				in.ConfigPath = p
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Minute)
			defer cancel()
			err = in.Run(ctx, installSteps())
			report(cmd.OutOrStdout(), in)
			return err
		},
	}
	cmd.Flags().StringVar(&root, "root", "/", "the folder every path is under")
	cmd.Flags().StringVar(&binary, "binary", "", "the nibrunnerd the systemd unit runs (default: this binary)")
	return cmd
}

// report prints what install did, or that it changed nothing, and what is
// left to do.
func report(w io.Writer, in *hostconfig.Install) {
	if len(in.Done) == 0 {
		fmt.Fprintln(w, "Nothing changed: this host was already installed.")
	}
	for _, d := range in.Done {
		fmt.Fprintln(w, "  done:", d)
	}
	for _, k := range in.Kept {
		fmt.Fprintln(w, "  kept:", k)
	}
	if len(in.Left) == 0 {
		fmt.Fprintln(w, "Nothing is left to do.")
		return
	}
	fmt.Fprintln(w, "Left to do:")
	for i, l := range in.Left {
		fmt.Fprintf(w, "  %d. %s\n", i+1, l)
	}
}
