package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/proposal"
)

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check the configuration offline: it loads, its references resolve, its rules hold",
		Long: `validate loads --config and the resources beside it (resources.hcl,
resources/*.hcl), as every other command does, and builds each declared
proposal's payload, without the network, state.json or an identity: a
terraform validate for alp. Every problem is reported with its file:line. A
proposal without a url is noted (governance accepts it; voters look for the
forum thread). With no proposals file but resources beside it, the resources
are checked alone.

What it cannot know offline (whether a node is healthy, a version elected, a
subnet's live record) is plan's to check.

Exit status: 0 valid, 1 not valid (each problem printed with its place).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadResourcesConfig(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			for _, d := range cfg.Proposals {
				if _, err := proposal.Build(d); err != nil {
					return fmt.Errorf("%s:%d: proposal %q: %w", d.Range.Filename, d.Range.Start.Line, d.Name, err)
				}
			}
			for _, d := range cfg.Proposals {
				if c := urlCheck(d); c != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", c.At, c.Message)
				}
			}
			return writeValid(cmd.OutOrStdout(), len(cfg.Proposals), resourceCount(&cfg.Resources))
		},
	}
}

func writeValid(w io.Writer, proposals, resources int) error {
	_, err := fmt.Fprintf(w, "The configuration is valid: %d proposal(s), %d resource(s).\n", proposals, resources)
	return err
}

// resourceCount is how many resource blocks r declares.
func resourceCount(r *config.Resources) int {
	return len(r.Subnets) + len(r.DataCenters) + len(r.NodeProviders) + len(r.NodeOperators) +
		len(r.GuestOSVersions) + len(r.HostOSVersions) + len(r.Nodes)
}
