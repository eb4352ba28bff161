package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/route"
)

// serveControl runs the control socket beside the daemon until ctx ends.
// A socket that cannot be opened is logged, not fatal: the daemon's job is
// the converge loop, and the socket only lets others ask it things.
func serveControl(ctx context.Context, cfg *hostconfig.Config, d *daemon.Daemon) {
	s := &control.Server{
		Apps:       d,
		ReportPath: filepath.Join(cfg.Paths.StateDir, daemon.ReportName),
		Conflicts:  []error{daemon.ErrCannotSleep, route.ErrNotRunning},
	}
	if err := s.ListenAndServe(ctx, control.SocketPath(cfg.Paths.RuntimeDir)); err != nil {
		fmt.Fprintln(os.Stderr, "nibrunnerd:", err)
	}
}

func newSleepCmd() *cobra.Command {
	return newCtlCmd("sleep", "Put an on-request app to sleep now (a snapshot the next wake restores)",
		func(ctx context.Context, c *control.Client, app string) error { return c.Sleep(ctx, app) }, 2*time.Minute)
}

func newWakeCmd() *cobra.Command {
	return newCtlCmd("wake", "Wake an app now and wait until its health check passes",
		func(ctx context.Context, c *control.Client, app string) error { return c.Wake(ctx, app) }, 6*time.Minute)
}

// newCtlCmd is a command that asks the running daemon, over its control
// socket, to do one thing to one app.
func newCtlCmd(verb, short string, do func(context.Context, *control.Client, string) error, timeout time.Duration) *cobra.Command {
	var configPath, socket string
	cmd := &cobra.Command{
		Use:   verb + " APP",
		Short: short,
		Long: short + `.

It asks the nibrunnerd serve of this host over its control socket
(runtime_dir/` + control.SocketName + ` from the host configuration, root only).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if socket == "" {
				if configPath == "" {
					configPath = hostconfig.Path()
				}
				cfg, err := hostconfig.Load(configPath)
				if err != nil {
					return err
				}
				socket = control.SocketPath(cfg.Paths.RuntimeDir)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			start := time.Now()
			if err := do(ctx, control.NewClient(socket), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s done in %s\n", args[0], verb, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "host configuration file (default $NIBRUNNER_CONFIG or /etc/nibrunner/config.toml)")
	cmd.Flags().StringVar(&socket, "socket", "", "the daemon's control socket (default runtime_dir/"+control.SocketName+")")
	return cmd
}
