package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/term"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/reported"
)

// The operator's commands: each asks the running daemon over its control
// socket and prints what it said, as text for a person or, with
// --output json, as the same rows for a script.

// daemonFlags are how a command finds the daemon: --socket, else the
// runtime_dir of the host configuration (--config, NIBRUNNER_CONFIG, the
// default path).
type daemonFlags struct {
	configPath, socket string
	output             string
}

func (f *daemonFlags) register(cmd *cobra.Command, output bool) {
	cmd.Flags().StringVar(&f.configPath, "config", "", "host configuration file (default $NIBRUNNER_CONFIG or /etc/nibrunner/config.toml)")
	cmd.Flags().StringVar(&f.socket, "socket", "", "the daemon's control socket (default runtime_dir/"+control.SocketName+")")
	if output {
		cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	}
}

// client is the control client of the daemon these flags name.
func (f *daemonFlags) client() (*control.Client, error) {
	switch f.output {
	case "", "text", "json":
	default:
		return nil, fmt.Errorf("--output %q: choose text or json", f.output)
	}
	if f.socket != "" {
		return control.NewClient(f.socket), nil
	}
	path := f.configPath
	if path == "" {
		path = hostconfig.Path()
	}
	cfg, err := hostconfig.Load(path)
	if err != nil {
		return nil, err
	}
	return control.NewClient(control.SocketPath(cfg.Paths.RuntimeDir)), nil
}

func (f *daemonFlags) json() bool { return f.output == "json" }

const askLong = `

It asks the nibrunnerd serve of this host over its control socket
(runtime_dir/` + control.SocketName + ` from the host configuration, root only).`

func newPSCmd() *cobra.Command {
	var f daemonFlags
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List every app: its state, deployment, host port, uptime, memory and last message",
		Long: `ps lists every app of this host's report: its state, deployment, host port,
how long its guest has been up, the memory the guest uses of what it has,
and the daemon's last message about it.` + askLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			b, err := c.Report(ctx)
			if err != nil {
				return err
			}
			var r reported.HostReportedState
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("reading the daemon's report: %w", err)
			}
			rows := psRows(&r, time.Now())
			if f.json() {
				return writeJSON(cmd, rows)
			}
			if err := renderPS(cmd.OutOrStdout(), term.For(cmd.OutOrStdout()), string(r.HostId), rows); err != nil {
				return fmt.Errorf("writing the table: %w", err)
			}
			if r.Message != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "\nhost %s: %s\n", r.HostId, r.Message)
			}
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func newStatusCmd() *cobra.Command {
	var f daemonFlags
	cmd := &cobra.Command{
		Use:   "status APP",
		Short: "Show one app's whole report: its instance, volume, checkpoints and exports",
		Long: `status shows everything this host reports about one app: the instance
(state, message, ports, times, restarts, memory, meters, layers), its
volume, the checkpoints of that volume and the app's exports.` + askLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			st, err := c.App(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json() {
				return writeJSON(cmd, st)
			}
			renderStatus(cmd.OutOrStdout(), term.For(cmd.OutOrStdout()), st, time.Now())
			return nil
		},
	}
	f.register(cmd, true)
	return cmd
}

func newLogsCmd() *cobra.Command {
	var f daemonFlags
	var follow bool
	var tail int
	cmd := &cobra.Command{
		Use:   "logs APP",
		Short: "Print an app's logs: the tenant's output and its guest's console",
		Long: `logs prints the last lines of each of an app's logs, each line named for its
source: "tenant" is what the app wrote (stdout and stderr), "console" is
its microVM's serial console since its last start (QEMU guests only).
With -f it keeps printing lines as they are written, until interrupted.
--output json prints one {"source","line"} object a line; each carries its seq, which --after takes to resume.` + askLong,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printStream(cmd, &f, follow, logLine, func(ctx context.Context, c *control.Client, each func(control.LogLine) error) error {
				return c.Logs(ctx, args[0], tail, follow, each)
			})
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing lines as they are written")
	cmd.Flags().IntVar(&tail, "tail", -1, "print only the last N lines of each log (default all)")
	return cmd
}

func newEventsCmd() *cobra.Command {
	var f daemonFlags
	var follow bool
	var after uint64
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Print what each converge pass did: started, slept, woke, failed, and why",
		Long: `events prints what changed on this host, one event a line: an app started, slept, woke, failed or was removed (with the daemon's
message saying why), a volume, checkpoint or export changed state, a
document was accepted or refused. Events are derived from consecutive
reports; the daemon keeps the last ` + fmt.Sprint(control.DefaultJournalSize) + ` in state.db, so a restart loses none
and numbers its own after them. With -f it keeps printing
them as they happen, until interrupted. --output json prints one event
object a line.` + askLong,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := term.For(cmd.OutOrStdout())
			text := func(e control.Event) string { return eventLine(p, e) }
			return printStream(cmd, &f, follow, text, func(ctx context.Context, c *control.Client, each func(control.Event) error) error {
				return c.Events(ctx, after, follow, each)
			})
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing events as they happen")
	cmd.Flags().Uint64Var(&after, "after", 0, "print only the events numbered above this seq")
	return cmd
}

// printStream prints what read hands on, a line each: text for a person,
// a JSON object for --output json.
func printStream[T any](cmd *cobra.Command, f *daemonFlags, follow bool, text func(T) string,
	read func(context.Context, *control.Client, func(T) error) error) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	ctx, stop := followContext(cmd.Context(), follow)
	defer stop()
	out := cmd.OutOrStdout()
	enc := json.NewEncoder(out)
	return read(ctx, c, func(v T) error {
		if f.json() {
			return enc.Encode(v)
		}
		_, err := fmt.Fprintln(out, text(v))
		return err
	})
}

// followContext ends a follow on an interrupt (a clean exit, not an
// error) and bounds a one-shot read.
func followContext(ctx context.Context, follow bool) (context.Context, context.CancelFunc) {
	if follow {
		return signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	}
	return context.WithTimeout(ctx, time.Minute)
}

func writeJSON(cmd *cobra.Command, v any) error {
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
