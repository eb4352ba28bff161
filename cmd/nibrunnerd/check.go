package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/desired"
)

// errRefused makes check exit 1 once it has printed the reasons.
var errRefused = errors.New("the document would be refused")

func newCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a desired.json and print why this host would refuse it",
		Long: `check reads a desired.json (FILE, or - for standard input) the way the daemon
does and prints "ok" when it would be accepted, or each reason it would be
refused whole, one per line as "path: rule". It exits 0 when the document is
accepted and 1 otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocument(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := desired.Decode(data); err != nil {
				for _, r := range desired.Reasons(err) {
					fmt.Fprintln(out, r)
				}
				return fmt.Errorf("%s: %w", args[0], errRefused)
			}
			fmt.Fprintln(out, "ok")
			return nil
		},
	}
}

func readDocument(stdin io.Reader, path string) ([]byte, error) {
	if path == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return data, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the document: %w", err)
	}
	return data, nil
}
