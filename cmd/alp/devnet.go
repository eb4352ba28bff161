package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/alpage/devnet"
	"alpnib.dev/internal/atomicfile"
)

func newDevnetCmd() *cobra.Command {
	var (
		fleetPath, dir, envFile string
		printEnv                bool
		latency, votingPeriod   time.Duration
		subnets                 int
		history                 int
	)
	cmd := &cobra.Command{
		Use:   "devnet",
		Short: "Run a local NNS and stand-ins for the services alp reads",
		Long: `devnet starts an offline network on 127.0.0.1 seeded from a fleet file: the
local NNS (registry and governance behind the IC HTTP interface), the registry
explorer, the ICP dashboard, each node's /api/v2/status (HTTPS) and an AMD KDS
stand-in, and writes an identity that controls a neuron.
It prints one "export NAME=value" line per setting that points alp at it and
serves until interrupted. Without --fleet it serves examples/fleet/fleet.json.

  alp devnet --env-file devnet.env &      # then: . ./devnet.env
  alp devnet --print-env                  # exports on stdout, the rest on stderr
  eval "$(alp devnet --print-env 2>devnet.log &)"   # stdout closes after the exports

The fleet format is described in docs/devnet.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data := devnet.DefaultFleet
			if fleetPath != "" {
				b, err := os.ReadFile(fleetPath)
				if err != nil {
					return fmt.Errorf("read fleet: %w", err)
				}
				data = b
			}
			fleet, err := devnet.ParseFleet(data)
			if err != nil {
				return err
			}
			if dir == "" {
				dir = filepath.Join(os.TempDir(), fmt.Sprintf("alp-devnet-%d", os.Getpid()))
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: dir, Latency: latency, VotingPeriod: votingPeriod, Subnets: subnets, History: history})
			if err != nil {
				return err
			}
			defer d.Close()

			var exports strings.Builder
			for _, e := range d.Env() {
				fmt.Fprintf(&exports, "export %s=%s\n", e.Name, shellQuote(e.Value))
			}
			human := cmd.OutOrStdout()
			if printEnv {
				human = cmd.ErrOrStderr()
			}
			describe(human, d)
			fmt.Fprint(cmd.OutOrStdout(), exports.String())
			if envFile != "" {
				if err := atomicfile.WriteFile(envFile, []byte(exports.String()), 0o600); err != nil {
					return fmt.Errorf("write env file: %w", err)
				}
			}
			if printEnv {
				// Close stdout once the exports are out, so that a shell's
				// $(alp devnet --print-env &) sees the end of them and
				// returns while the devnet keeps serving in the background.
				if f, ok := cmd.OutOrStdout().(*os.File); ok {
					if err := f.Close(); err != nil {
						return fmt.Errorf("close stdout after the exports: %w", err)
					}
				}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "alp devnet: serving; interrupt to stop")
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&fleetPath, "fleet", "", "fleet file (JSON, see docs/devnet.md); default: the embedded examples/fleet/fleet.json")
	cmd.Flags().StringVar(&dir, "dir", "", "folder for identity.pem and node-ca.pem (default: a new folder under $TMPDIR)")
	cmd.Flags().StringVar(&envFile, "env-file", "", "also write the export lines to this file once every endpoint listens")
	cmd.Flags().BoolVar(&printEnv, "print-env", false, "print only the export lines on stdout (the description goes to stderr)")
	cmd.Flags().DurationVar(&latency, "latency", 0, "delay every request to every endpoint by this much (e.g. 50ms)")
	cmd.Flags().DurationVar(&votingPeriod, "voting-period", 0, "keep proposals open this long before deciding (0: adopt and execute at once)")
	cmd.Flags().IntVar(&history, "history", 0, "start the registry at this version, the node operator records written again one version each (mainnet's registry was near 52,000 in mid-2025), so a cold registry sync pages through many replies")
	cmd.Flags().IntVar(&subnets, "subnets", 1, "subnets of the local IC: 1, or 2 (the NNS canisters on the root subnet, a second subnet certified under a delegation from it)")
	return cmd
}

func describe(w io.Writer, d *devnet.Devnet) {
	fmt.Fprintf(w, "# IC HTTP interface   %s\n", d.ICURL)
	fmt.Fprintf(w, "# registry explorer   %s\n", d.ExplorerURL)
	fmt.Fprintf(w, "# ICP dashboard       %s\n", d.DashboardURL)
	fmt.Fprintf(w, "# AMD KDS             %s/vcek/v1/<product>/<chip hex>\n", d.KDSURL)
	fmt.Fprintf(w, "# node status         %d nodes over HTTPS (certificate %s)\n", len(d.NodeStatusURLs), d.NodeCAPath)
	fmt.Fprintf(w, "# identity            %s (%s)\n", d.IdentityPath, d.Identity)
	if d.Neuron != 0 {
		fmt.Fprintf(w, "# neuron              %d\n", d.Neuron)
	}
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
