package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/control"
)

// nobody is the uid and gid an exec runs as unless --user says otherwise.
const nobody = 65534

// exitCode is a command's exit status that is not an error of its own:
// the status of the program an exec ran.
type exitCode int

func (e exitCode) Error() string { return "exit status " + strconv.Itoa(int(e)) }

func newExecCmd() *cobra.Command {
	var f daemonFlags
	var stdin, tty bool
	var user, workdir string
	var env []string
	cmd := &cobra.Command{
		Use:   "exec APP [flags] -- PROGRAM [ARG...]",
		Short: "Run a program inside an app's running guest, as kubectl exec does",
		Long: `exec runs PROGRAM in the app's root inside its guest, with the app's
environment, as uid 65534 unless --user says otherwise, and streams its
stdout and stderr here; its exit status is this command's. -i sends this
command's stdin to it; -t gives it a terminal (window-size changes follow,
and Ctrl-C interrupts the program, not this command).

PROGRAM must exist in the app's root (a name without a slash is looked up
in the PATH of the app's environment): the host injects no shell, and
docs/debugging.md shows how to add one as a layer. An
on-request app that sleeps is woken first, and the session counts as its
traffic while it lasts; an app that is stopped is refused. Each exec is an
event (nibrunnerd events).` + askLong,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if at := cmd.ArgsLenAtDash(); at != 1 {
				return errors.New("name the app, then -- and the program: nibrunnerd exec APP -- PROGRAM [ARG...]")
			}
			uid, gid, err := parseUser(user)
			if err != nil {
				return err
			}
			for _, kv := range env {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return fmt.Errorf("--env %q: give it as KEY=VALUE", kv)
				}
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			req := control.ExecRequest{Argv: args[1:], Env: env, Workdir: workdir, UID: uid, GID: gid, TTY: tty, Stdin: stdin}
			return runExec(cmd.Context(), c, args[0], req, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "send this command's stdin to the program")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "give the program a terminal")
	cmd.Flags().StringVarP(&user, "user", "u", "", "run as UID or UID:GID (default 65534:65534)")
	cmd.Flags().StringArrayVarP(&env, "env", "e", nil, "add KEY=VALUE to the program's environment (repeatable)")
	cmd.Flags().StringVarP(&workdir, "workdir", "w", "", "the program's working directory in the app's root (default the app's)")
	f.register(cmd, false)
	return cmd
}

// parseUser reads --user: UID or UID:GID (the gid is the uid's when left
// out).
func parseUser(v string) (uint32, uint32, error) {
	if v == "" {
		return nobody, nobody, nil
	}
	us, gs, hasGID := strings.Cut(v, ":")
	uid, err := strconv.ParseUint(us, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("--user %q: give a numeric UID or UID:GID (names are the app's, and the host does not read them)", v)
	}
	gid := uid
	if hasGID {
		if gid, err = strconv.ParseUint(gs, 10, 32); err != nil {
			return 0, 0, fmt.Errorf("--user %q: give a numeric UID or UID:GID", v)
		}
	}
	return uint32(uid), uint32(gid), nil
}

// runExec runs req in app, with this process's terminal when -t asks for
// one and stdin is one, and returns the program's exit status as an
// exitCode.
func runExec(ctx context.Context, c *control.Client, app string, req control.ExecRequest, in io.Reader, out, errOut io.Writer) error {
	sio := control.ExecIO{Stdout: out, Stderr: errOut}
	if req.Stdin {
		sio.Stdin = in
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	term := -1
	if f, ok := in.(*os.File); ok && req.TTY && isTerminal(int(f.Fd())) {
		term = int(f.Fd())
	}
	if req.TTY {
		if ws, err := unix.IoctlGetWinsize(termFd(term, out), unix.TIOCGWINSZ); err == nil {
			req.Rows, req.Cols = ws.Row, ws.Col
		}
	}
	conn, err := c.Exec(ctx, app, req)
	if err != nil {
		return err
	}
	if term >= 0 {
		restore, err := makeRaw(term)
		if err != nil {
			conn.Close()
			return fmt.Errorf("-t: putting the terminal in raw mode: %w", err)
		}
		defer restore()
		resize := make(chan [2]uint16, 1)
		sio.Resize = resize
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		defer signal.Stop(winch)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-winch:
					if ws, err := unix.IoctlGetWinsize(term, unix.TIOCGWINSZ); err == nil {
						select {
						case resize <- [2]uint16{ws.Row, ws.Col}:
						default:
						}
					}
				}
			}
		}()
	} else {
		// Without a terminal, an interrupt here is the program's.
		sigs := make(chan int, 4)
		sio.Signal = sigs
		caught := make(chan os.Signal, 4)
		signal.Notify(caught, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
		defer signal.Stop(caught)
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case s := <-caught:
					sigs <- int(s.(syscall.Signal))
				}
			}
		}()
	}
	exit, err := control.RunExec(ctx, conn, sio)
	if err != nil {
		return fmt.Errorf("exec into %s: %w", app, err)
	}
	if exit.Error != "" {
		fmt.Fprintf(errOut, "nibrunnerd: exec into %s: %s\n", app, exit.Error)
	}
	if exit.Code != 0 {
		code := int(exit.Code)
		if code < 0 || code > 255 {
			code = 255
		}
		return exitCode(code)
	}
	return nil
}

func termFd(term int, out io.Writer) int {
	if term >= 0 {
		return term
	}
	if f, ok := out.(*os.File); ok {
		return int(f.Fd())
	}
	return -1
}

func isTerminal(fd int) bool {
	_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	return err == nil
}

// makeRaw puts the terminal at fd in raw mode, as cfmakeraw(3) does, and
// returns what restores it.
func makeRaw(fd int) (func(), error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, err
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN] = 1
	raw.Cc[unix.VTIME] = 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, err
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
