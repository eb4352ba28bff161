package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// terraformFlags lets a command take its long flags with one dash, as
// Terraform spells them (-out FILE, -auto-approve, -check): pflag would
// read -out as -o ut. The command sets DisableFlagParsing and calls
// parseFlags first in RunE; its positional arguments are then
// cmd.Flags().Args(). help reports that --help was asked for and printed.
func parseFlags(cmd *cobra.Command, args []string) (help bool, err error) {
	cmd.DisableFlagParsing = false // ParseFlags is a no-op while set
	if err := cmd.ParseFlags(singleDashLong(cmd, args)); err != nil {
		return false, fmt.Errorf("%w\n%s", err, cmd.UsageString())
	}
	if h, _ := cmd.Flags().GetBool("help"); h {
		return true, cmd.Help()
	}
	return false, nil
}

// singleDashLong rewrites -name and -name=value to --name… for each long
// flag of cmd; anything else (shorthands, values, --) is left as it is.
func singleDashLong(cmd *cobra.Command, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "--" {
			copy(out[i:], args[i:])
			break
		}
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
			name, _, _ := strings.Cut(a[1:], "=")
			if len(name) > 1 && (cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil) {
				a = "-" + a
			}
		}
		out[i] = a
	}
	return out
}
