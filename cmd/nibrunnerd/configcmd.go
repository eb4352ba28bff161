package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/hostconfig"
)

// errConfigRefused makes config check exit 1 once it has printed the
// reasons.
var errConfigRefused = errors.New("the configuration would be refused")

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Work with the host configuration (config.toml)",
		Long: `config holds commands about the host configuration, config.toml. Every key is
described in docs/config-toml.md.`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "check FILE",
		Short: "Validate a config.toml and print why the daemon would refuse it",
		Long: `config check reads a config.toml the way the daemon does at start and prints
"ok" when it would be accepted, or each reason it would be refused, one per
line: a missing key, an unknown one (with the key it was likely meant to be),
a value out of range. It exits 0 when the file is accepted and 1 otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := hostconfig.Load(args[0])
			var invalid *hostconfig.Invalid
			switch {
			case errors.As(err, &invalid):
				for _, r := range invalid.Reasons {
					fmt.Fprintln(cmd.OutOrStdout(), r)
				}
				return fmt.Errorf("%s: %w", args[0], errConfigRefused)
			case err != nil:
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "ok")
			return nil
		},
	})
	return cmd
}
