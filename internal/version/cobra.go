package version

import (
	"fmt"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/term"
)

// Attach gives root a `version` command and a `--version` flag that both
// print Line for root's name, bare when stdout is not a terminal. root
// keeps showing its help when run with neither.
func Attach(root *cobra.Command) {
	print := func(cmd *cobra.Command) {
		fmt.Fprintln(cmd.OutOrStdout(), Line(root.Name(), term.IsTerminal(cmd.OutOrStdout())))
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print the release version (bare when stdout is not a terminal)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			print(cmd)
			return nil
		},
	})
	var asked bool
	root.Flags().BoolVar(&asked, "version", false, "print the release version, as the version command does")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if asked {
			print(cmd)
			return nil
		}
		return cmd.Help()
	}
}
