package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/execwire"
)

// enterExecArg is the first argument with which the init runs its own
// binary for an exec session: as enterTenantArg, with the uid and gid the
// host asked for.
const enterExecArg = "enter-exec"

// maxExecSessions bounds the sessions one guest serves at once, whatever
// the host asks; the host's own cap per app is lower.
const maxExecSessions = 64

// enterExec is an exec child's whole life: args are the root, the working
// directory, the uid, the gid, then the program and its arguments.
func enterExec(args []string) {
	if len(args) < 5 {
		fmt.Fprintf(os.Stderr, "nibrun-init: %s wants a root, a working directory, a uid, a gid and a program\n", enterExecArg)
		os.Exit(2)
	}
	uid, err1 := strconv.Atoi(args[2])
	gid, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "nibrun-init: %s: uid %q and gid %q must be numbers\n", enterExecArg, args[2], args[3])
		os.Exit(2)
	}
	argv := args[4:]
	runtime.LockOSThread()
	if err := dropPrivileges(args[0], args[1], uid, gid); err != nil {
		fmt.Fprintf(os.Stderr, "nibrun-init: cannot start %s: %v\n", argv[0], err)
		os.Exit(execwire.CodeCannotRun)
	}
	prog, err := lookPath(argv[0])
	if err == nil {
		err = syscall.Exec(prog, argv, os.Environ())
	}
	fmt.Fprintf(os.Stderr, "nibrun-init: cannot start %s: %v\n", argv[0], err)
	if errors.Is(err, unix.ENOENT) {
		os.Exit(execwire.CodeNotFound)
	}
	os.Exit(execwire.CodeCannotRun)
}

// defaultPath is searched for a program named without a slash when the
// app's environment has no PATH: glibc's execvp(3) default (CS_PATH).
const defaultPath = "/bin:/usr/bin"

// lookPath finds a program named without a slash (tar, sh) in the PATH of
// the app's environment, as execvp(3) does, in the root it is called in
// (after the chroot); a name with a slash is taken as it is.
func lookPath(prog string) (string, error) {
	if strings.Contains(prog, "/") {
		return prog, nil
	}
	path, ok := os.LookupEnv("PATH")
	if !ok {
		path = defaultPath
	}
	denied := false
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, prog)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrPermission) {
			denied = true
		}
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if unix.Access(p, unix.X_OK) != nil {
			denied = true
			continue
		}
		return p, nil
	}
	if denied {
		return "", fmt.Errorf("%s in the PATH %q cannot be run: %w", prog, path, unix.EACCES)
	}
	return "", fmt.Errorf("no %s in the PATH %q of the app's root: %w", prog, path, unix.ENOENT)
}

// procStarter starts a child and hands back its exit code: in the guest
// the init's reaper collects every child, so the exit comes from it.
type procStarter interface {
	startWatched(argv []string, attr *os.ProcAttr) (pid int, exit <-chan int, err error)
}

// execServer serves the host's exec sessions. Frames arrive from the
// control port's one reader, which must never block on a session: stdin
// is buffered up to the window the guest granted, and nothing else is.
type execServer struct {
	root    string
	wd      string
	environ []string
	start   procStarter
	send    func(frame []byte) error // blocks while the host reads slowly

	mu       sync.Mutex
	sessions map[uint32]*execSession
}

type execSession struct {
	x    *execServer
	id   uint32
	pid  int
	pty  *os.File // the terminal's master end (-t), else nil
	exit <-chan int
	ctx  context.Context
	stop context.CancelFunc

	credit [3]*execwire.Credit // stdout and stderr, by Stream

	inMu     sync.Mutex
	in       []byte // stdin received, not yet written
	inWin    *execwire.Window
	inClosed bool
	inMore   chan struct{} // 1-buffered: stdin arrived or closed
	stdin    *os.File      // nil without -i
}

func newExecServer(root, wd string, environ []string, start procStarter, send func([]byte) error) *execServer {
	if wd == "" {
		wd = "/"
	}
	return &execServer{root: root, wd: wd, environ: environ, start: start, send: send, sessions: map[uint32]*execSession{}}
}

// frame handles one frame from the host; a malformed one is dropped, and
// one that breaks its session's rules ends that session.
func (x *execServer) frame(b []byte) {
	f, err := execwire.ParseFrame(b)
	if err != nil {
		logf("exec: %v", err)
		return
	}
	if f.Type == execwire.TypeOpen {
		x.open(f.Session, f.Payload)
		return
	}
	x.mu.Lock()
	s := x.sessions[f.Session]
	x.mu.Unlock()
	if s == nil {
		return // a session already over; the host learns of it by its exit
	}
	if err := s.handle(f); err != nil {
		logf("exec session %d: %v; killing it", f.Session, err)
		s.kill()
	}
}

func (x *execServer) sendFrame(t execwire.Type, session uint32, payload []byte) error {
	b, err := execwire.AppendFrame(make([]byte, 0, execwire.HeaderSize+len(payload)), t, session, payload)
	if err != nil {
		return err
	}
	return x.send(b)
}

func (x *execServer) refuse(session uint32, code int32, format string, a ...any) {
	_ = x.sendFrame(execwire.TypeExit, session, execwire.AppendExit(nil, execwire.Exit{Code: code, Error: fmt.Sprintf(format, a...)}))
}

func (x *execServer) open(id uint32, payload []byte) {
	spec, err := execwire.ParseSpec(payload)
	if err != nil {
		x.refuse(id, execwire.CodeCannotRun, "%v", err)
		return
	}
	x.mu.Lock()
	_, dup := x.sessions[id]
	n := len(x.sessions)
	if !dup && n < maxExecSessions {
		x.sessions[id] = nil // reserved while starting
	}
	x.mu.Unlock()
	if dup {
		x.refuse(id, execwire.CodeCannotRun, "exec session %d is already open", id)
		return
	}
	if n >= maxExecSessions {
		x.refuse(id, execwire.CodeCannotRun, "the guest already serves %d exec sessions, its most", maxExecSessions)
		return
	}
	s, files, err := x.startSession(id, spec)
	if err != nil {
		x.mu.Lock()
		delete(x.sessions, id)
		x.mu.Unlock()
		x.refuse(id, execwire.CodeCannotRun, "start %s: %v", spec.Argv[0], err)
		return
	}
	x.mu.Lock()
	x.sessions[id] = s
	x.mu.Unlock()
	go s.run(files)
}

// outputs are the files a session's output is read from, by Stream.
type outputs [3]*os.File

func (x *execServer) startSession(id uint32, spec execwire.Spec) (*execSession, outputs, error) {
	var outs outputs
	s := &execSession{x: x, id: id, inWin: execwire.NewWindow(execwire.DefaultWindow), inMore: make(chan struct{}, 1)}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.credit[execwire.Stdout] = execwire.NewCredit(execwire.DefaultWindow)
	s.credit[execwire.Stderr] = execwire.NewCredit(execwire.DefaultWindow)

	var child [3]*os.File
	var closeAfter []*os.File
	fail := func(err error) (*execSession, outputs, error) {
		for _, f := range append(closeAfter, outs[1], outs[2], s.stdin, s.pty) {
			if f != nil {
				f.Close()
			}
		}
		return nil, outputs{}, err
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	closeAfter = append(closeAfter, null)
	sys := &syscall.SysProcAttr{Setsid: true}
	if spec.TTY {
		master, peer, err := openPTY()
		if err != nil {
			return fail(fmt.Errorf("open a terminal: %w", err))
		}
		closeAfter = append(closeAfter, peer)
		s.pty = master
		if spec.Rows > 0 && spec.Cols > 0 {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: spec.Rows, Col: spec.Cols})
		}
		child = [3]*os.File{peer, peer, peer}
		sys.Setctty = true
		sys.Ctty = 0
		// One stream carries the terminal's output; stderr has none.
		outs[execwire.Stdout] = master
		if spec.Stdin {
			s.stdin = master
		}
	} else {
		child[0] = null
		if spec.Stdin {
			r, w, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			closeAfter = append(closeAfter, r)
			child[0], s.stdin = r, w
		}
		for _, st := range []execwire.Stream{execwire.Stdout, execwire.Stderr} {
			r, w, err := os.Pipe()
			if err != nil {
				return fail(err)
			}
			closeAfter = append(closeAfter, w)
			child[st], outs[st] = w, r
		}
	}
	wd := x.wd
	if spec.Workdir != "" {
		wd = spec.Workdir
	}
	argv := append([]string{os.Args[0], enterExecArg, x.root, wd, strconv.Itoa(int(spec.UID)), strconv.Itoa(int(spec.GID)), filepath.Clean(spec.Argv[0])}, spec.Argv[1:]...)
	env := append(append([]string{}, x.environ...), spec.Env...)
	pid, exit, err := x.start.startWatched(argv, &os.ProcAttr{Env: env, Files: child[:], Sys: sys})
	if err != nil {
		return fail(err)
	}
	for _, f := range closeAfter {
		f.Close()
	}
	s.pid = pid
	s.exit = exit
	return s, outs, nil
}

// run pumps the session's streams until the program has exited and its
// output is drained, then reports the exit and forgets the session.
func (s *execSession) run(outs outputs) {
	var pumps sync.WaitGroup
	for st, f := range outs {
		if f == nil {
			continue
		}
		pumps.Add(1)
		go func(st execwire.Stream, f *os.File) {
			defer pumps.Done()
			s.pump(st, f)
		}(execwire.Stream(st), f)
	}
	if s.stdin != nil {
		go s.writeStdin()
	}
	code := <-s.exit
	pumps.Wait()
	s.stop()
	for _, c := range s.credit {
		if c != nil {
			c.Close()
		}
	}
	s.inMu.Lock()
	s.inClosed = true
	s.inMu.Unlock()
	s.notifyStdin()
	for _, f := range outs {
		if f != nil && f != s.pty {
			f.Close()
		}
	}
	if s.stdin != nil && s.stdin != s.pty {
		s.stdin.Close()
	}
	if s.pty != nil {
		s.pty.Close()
	}
	s.x.mu.Lock()
	delete(s.x.sessions, s.id)
	s.x.mu.Unlock()
	if err := s.x.sendFrame(execwire.TypeExit, s.id, execwire.AppendExit(nil, execwire.Exit{Code: int32(code)})); err != nil {
		logf("exec session %d: report exit %d: %v", s.id, code, err)
	}
}

// pump sends one output stream, never reading more than the host granted.
func (s *execSession) pump(st execwire.Stream, f *os.File) {
	buf := make([]byte, 1, execwire.HeaderSize+execwire.MaxPayload)
	buf[0] = byte(st)
	for {
		n, err := s.credit[st].Take(s.ctx, execwire.MaxData)
		if err != nil {
			return
		}
		got, rerr := f.Read(buf[1 : 1+n])
		if got < n {
			_ = s.credit[st].Grant(uint32(n - got))
		}
		if got > 0 {
			if err := s.x.sendFrame(execwire.TypeData, s.id, buf[:1+got]); err != nil {
				logf("exec session %d: send %s: %v", s.id, st, err)
				return
			}
		}
		if rerr != nil {
			// EOF on a pipe; EIO on a terminal whose every peer closed.
			return
		}
	}
}

func (s *execSession) notifyStdin() {
	select {
	case s.inMore <- struct{}{}:
	default:
	}
}

// writeStdin writes what the host sent and grants the window back as the
// program reads it.
func (s *execSession) writeStdin() {
	for {
		s.inMu.Lock()
		chunk, closed := s.in, s.inClosed
		s.in = nil
		s.inMu.Unlock()
		if len(chunk) > 0 {
			if _, err := s.stdin.Write(chunk); err != nil {
				return
			}
			s.inMu.Lock()
			grant := s.inWin.Consumed(len(chunk))
			s.inMu.Unlock()
			if grant > 0 {
				_ = s.x.sendFrame(execwire.TypeWindow, s.id, execwire.AppendWindow(nil, execwire.Stdin, grant))
			}
			continue
		}
		if closed {
			if s.pty != nil {
				_, _ = s.pty.Write([]byte{4}) // ^D: end of input at the terminal
			} else {
				s.stdin.Close()
			}
			return
		}
		select {
		case <-s.inMore:
		case <-s.ctx.Done():
			return
		}
	}
}

// handle applies one frame of an open session.
func (s *execSession) handle(f execwire.Frame) error {
	switch f.Type {
	case execwire.TypeData:
		st, d, err := execwire.ParseData(f.Payload)
		if err != nil {
			return err
		}
		if st != execwire.Stdin || s.stdin == nil {
			return fmt.Errorf("data for %s, which the session does not take", st)
		}
		s.inMu.Lock()
		if err := s.inWin.Received(len(d)); err != nil {
			s.inMu.Unlock()
			return err
		}
		s.in = append(s.in, d...)
		s.inMu.Unlock()
		s.notifyStdin()
	case execwire.TypeWindow:
		st, n, err := execwire.ParseWindow(f.Payload)
		if err != nil {
			return err
		}
		if st == execwire.Stdin {
			return errors.New("a window for stdin, which the guest grants")
		}
		return s.credit[st].Grant(n)
	case execwire.TypeResize:
		rows, cols, err := execwire.ParseResize(f.Payload)
		if err != nil {
			return err
		}
		if s.pty == nil {
			return nil // nothing to resize without a terminal
		}
		// The kernel sends SIGWINCH to the terminal's foreground group.
		return unix.IoctlSetWinsize(int(s.pty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	case execwire.TypeSignal:
		sig, err := execwire.ParseSignal(f.Payload)
		if err != nil {
			return err
		}
		// The program leads its own session and process group.
		_ = unix.Kill(-s.pid, unix.Signal(sig))
	case execwire.TypeCloseStdin:
		s.inMu.Lock()
		s.inClosed = true
		s.inMu.Unlock()
		s.notifyStdin()
	case execwire.TypeClose:
		s.kill()
	default:
		return fmt.Errorf("a %s frame, which only the guest sends", f.Type)
	}
	return nil
}

// kill ends the program's whole process group and stops waiting for
// credit: the host wants none of the rest of its output.
func (s *execSession) kill() {
	_ = unix.Kill(-s.pid, unix.SIGKILL)
	s.stop()
}

// openPTY opens a terminal pair on the init's devpts, mounting it on
// /dev/pts the first time. The peer is handed to the program as its
// stdio; the tenant's root needs no /dev/pts of its own.
func openPTY() (master, peer *os.File, err error) {
	if _, err := os.Stat("/dev/pts/ptmx"); err != nil {
		_ = os.MkdirAll("/dev/pts", 0o755)
		if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "ptmxmode=0666,mode=0620"); err != nil && !errors.Is(err, unix.EBUSY) {
			return nil, nil, fmt.Errorf("mount devpts on /dev/pts: %w", err)
		}
	}
	m, err := os.OpenFile("/dev/pts/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("unlock the terminal: %w", err)
	}
	// TIOCGPTPEER opens the peer without a path (Linux 4.13).
	fd, _, errno := unix.Syscall(unix.SYS_IOCTL, m.Fd(), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		err = errno
		m.Close()
		return nil, nil, fmt.Errorf("open the terminal's peer: %w", err)
	}
	return m, os.NewFile(uintptr(fd), "pty"), nil
}
