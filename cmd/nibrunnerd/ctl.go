package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/execs"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
)

// serveControl runs the control socket serve bound (listenControl) beside
// the daemon until ctx ends.
func serveControl(ctx context.Context, cfg *hostconfig.Config, d *daemon.Daemon, v vmm.VMM, ex *execs.Sessions, j *control.Journal, l net.Listener) {
	s := &control.Server{
		Apps:       d,
		Journal:    j,
		ReportPath: filepath.Join(cfg.Paths.StateDir, daemon.ReportName),
		Accepted:   d.Accepted,
		Logs:       logFiles(v),
		Conflicts:  []error{daemon.ErrCannotSleep, route.ErrNotRunning},
		Execs:      ex,
		// A stopped app (route.ErrNotRunning, above) or one with all its
		// sessions open cannot take an exec now.
		ExecConflicts: []error{execs.ErrBusy},
	}
	if err := s.Serve(ctx, control.SocketPath(cfg.Paths.RuntimeDir), l); err != nil {
		fmt.Fprintln(os.Stderr, "nibrunnerd:", err)
	}
}

// listenControl binds the control socket before the daemon opens: a live
// daemon answering on it stops this one (control.ErrInUse). A socket that
// cannot be bound otherwise is logged, not fatal, and l is nil: the
// daemon's job is the converge loop, and the socket only lets others ask
// it things.
func listenControl(path string) (l net.Listener, err error) {
	l, err = control.Listen(path)
	if errors.Is(err, control.ErrInUse) {
		return nil, err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "nibrunnerd:", err)
		return nil, nil
	}
	return l, nil
}

// logFiles names an app's logs for the VMM that runs its guest (looked up
// through any wrapper, as [metrics] adds one): the tenant's output, and
// the serial console of a VMM that has one.
func logFiles(v vmm.VMM) func(app string) []control.LogFile {
	return func(app string) []control.LogFile {
		var files []control.LogFile
		if c, ok := vmm.As[vmm.ConsoleLogger](v); ok {
			// The QEMU VMM rotates the console to .1 too (vmm/qemu).
			p := c.ConsolePath(app)
			files = append(files, control.LogFile{Source: "console", Path: p, Rotated: p + ".1"})
		}
		if t, ok := vmm.As[vmm.TenantLogger](v); ok {
			// The QEMU VMM rotates the tenant's log to .1 (vmm/qemu).
			p := t.TenantLogPath(app)
			files = append(files, control.LogFile{Source: "tenant", Path: p, Rotated: p + ".1"})
		}
		return files
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
	var f daemonFlags
	cmd := &cobra.Command{
		Use:   verb + " APP",
		Short: short,
		Long:  short + "." + askLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			start := time.Now()
			if err := do(ctx, c, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s done in %s\n", args[0], verb, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f.register(cmd, false)
	return cmd
}
