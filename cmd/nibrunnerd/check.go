package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/hostconfig"
)

// errRefused makes check exit 1 once it has printed the reasons.
var errRefused = errors.New("the document would be refused")

func newCheckCmd() *cobra.Command {
	var configPath string
	var strict bool
	cmd := &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a desired.json and print why this host would refuse it",
		Long: `check reads a desired.json (FILE, or - for standard input) the way the daemon
does and prints "ok" when it would be accepted, or each reason it would be
refused whole, one per line as "path: rule". After "ok" it names each instance
the host would fail while it runs the rest (no memory, an environment value
with a newline; with --config also what this host cannot carry). It exits 0
when the document is accepted and 1 otherwise.

A property the document's types do not have is ignored, as the daemon
ignores it, and check warns of it on standard error naming its path and the
property it is nearest to ("warning: instances[0].config.resources.memoryMB:
unknown property, ignored: did you mean memoryMib?"); the daemon lists the
same warnings in reported.json. --strict refuses the document for them
instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readDocument(cmd.InOrStdin(), args[0])
			if err != nil {
				return err
			}
			var host *hostconfig.Config
			if configPath != "" {
				if host, err = hostconfig.Load(configPath); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			fv := desired.FieldWarn
			if strict {
				fv = desired.FieldStrict
			}
			doc, warnings, err := desired.DecodeFields(data, fv)
			for _, w := range warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if err != nil {
				for _, r := range desired.Reasons(err) {
					fmt.Fprintln(out, r)
				}
				return fmt.Errorf("%s: %w", args[0], errRefused)
			}
			fmt.Fprintln(out, "ok")
			// Without a configuration, what fails an instance on any host:
			// limits no host exceeds leave only those problems.
			limits := desired.HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: hostconfig.MaxPortsPerGuest}
			if host != nil {
				limits = host.Limits()
			}
			problems := desired.InstanceProblems(doc, limits)
			for i, in := range doc.Instances {
				if why, ok := problems[in.AppId]; ok {
					fmt.Fprintf(out, "instances[%d] (%s): %s\n", i, in.AppId, why)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "also check the instances against this host configuration (config.toml)")
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse a document with a property its types do not have, instead of warning of it")
	return cmd
}

// readDocument reads at most one byte more than desired.MaxDocumentBytes,
// enough for Decode to refuse a document over the limit without holding
// all of it.
func readDocument(stdin io.Reader, path string) ([]byte, error) {
	what, r := "standard input", stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("reading the document: %w", err)
		}
		defer f.Close()
		what, r = path, f
	}
	data, err := io.ReadAll(io.LimitReader(r, desired.MaxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return data, nil
}
