// Package exectest is a vmm.Execer for tests that runs the program on this
// machine, with the guest init's side of execwire's credit: stdout and
// stderr are sent only as far as the host granted, stdin granted back as
// the program reads it. It has no terminal; resizes and signals are
// recorded, and a signal is delivered to the process.
package exectest

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"alpnib.dev/nibrunner/execwire"
	"alpnib.dev/nibrunner/vmm"
)

// Execer runs each session's program here. Rewrite, when set, may change
// the argv first (a test's stand-in for the app's root).
type Execer struct {
	Rewrite func(app string, spec execwire.Spec) []string

	mu      sync.Mutex
	Specs   []execwire.Spec
	Resizes [][2]uint16
	Signals []int
	// Opened counts sessions; Closed those the host abandoned.
	Opened, Closed int
}

type frame struct {
	t execwire.Type
	p []byte
}

// Exec starts the program.
func (e *Execer) Exec(ctx context.Context, app string, spec execwire.Spec) (vmm.ExecStream, error) {
	argv := spec.Argv
	if e.Rewrite != nil {
		argv = e.Rewrite(app, spec)
	}
	e.mu.Lock()
	e.Specs = append(e.Specs, spec)
	e.Opened++
	e.mu.Unlock()
	s := &stream{e: e, frames: make(chan frame, 8), done: make(chan struct{}),
		inWin: execwire.NewWindow(execwire.DefaultWindow)}
	s.credit[execwire.Stdout] = execwire.NewCredit(execwire.DefaultWindow)
	s.credit[execwire.Stderr] = execwire.NewCredit(execwire.DefaultWindow)
	s.ctx, s.cancel = context.WithCancel(context.Background())
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Workdir
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	cmd.Stdout, cmd.Stderr = outW, errW
	if spec.Stdin {
		r, w, _ := os.Pipe()
		cmd.Stdin, s.stdin = r, w
		defer r.Close()
	}
	if err := cmd.Start(); err != nil {
		outR.Close()
		errR.Close()
		outW.Close()
		errW.Close()
		go s.exit(execwire.Exit{Code: execwire.CodeNotFound, Error: err.Error()})
		return s, nil
	}
	outW.Close()
	errW.Close()
	s.proc = cmd.Process
	var pumps sync.WaitGroup
	for st, f := range map[execwire.Stream]*os.File{execwire.Stdout: outR, execwire.Stderr: errR} {
		pumps.Add(1)
		go func() {
			defer pumps.Done()
			defer f.Close()
			s.pump(st, f)
		}()
	}
	go func() {
		pumps.Wait()
		err := cmd.Wait()
		code := 0
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
			if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		}
		s.exit(execwire.Exit{Code: int32(code)})
	}()
	return s, nil
}

type stream struct {
	e      *Execer
	frames chan frame
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	proc   *os.Process
	stdin  *os.File
	inWin  *execwire.Window
	credit [3]*execwire.Credit
}

func (s *stream) pump(st execwire.Stream, f *os.File) {
	buf := make([]byte, execwire.MaxData)
	for {
		n, err := f.Read(buf)
		for p := buf[:n]; len(p) > 0; {
			k, cerr := s.credit[st].Take(s.ctx, len(p))
			if cerr != nil {
				return
			}
			if !s.send(execwire.TypeData, execwire.AppendData(nil, st, p[:k])) {
				return
			}
			p = p[k:]
		}
		if err != nil {
			return
		}
	}
}

func (s *stream) send(t execwire.Type, p []byte) bool {
	select {
	case s.frames <- frame{t, p}:
		return true
	case <-s.ctx.Done():
		return false
	}
}

func (s *stream) exit(e execwire.Exit) {
	s.send(execwire.TypeExit, execwire.AppendExit(nil, e))
	s.once.Do(func() { close(s.done) })
}

// Send takes the host's frames as the guest's init would.
func (s *stream) Send(t execwire.Type, p []byte) error {
	switch t {
	case execwire.TypeWindow:
		st, n, err := execwire.ParseWindow(p)
		if err != nil {
			return err
		}
		if st != execwire.Stdin {
			return s.credit[st].Grant(n)
		}
	case execwire.TypeData:
		_, d, err := execwire.ParseData(p)
		if err != nil {
			return err
		}
		if err := s.inWin.Received(len(d)); err != nil {
			return err
		}
		if s.stdin != nil {
			if _, err := s.stdin.Write(d); err != nil {
				return nil // the program stopped reading
			}
		}
		if g := s.inWin.Consumed(len(d)); g > 0 {
			go s.send(execwire.TypeWindow, execwire.AppendWindow(nil, execwire.Stdin, g))
		}
	case execwire.TypeCloseStdin:
		if s.stdin != nil {
			s.stdin.Close()
		}
	case execwire.TypeResize:
		rows, cols, err := execwire.ParseResize(p)
		if err != nil {
			return err
		}
		s.e.mu.Lock()
		s.e.Resizes = append(s.e.Resizes, [2]uint16{rows, cols})
		s.e.mu.Unlock()
	case execwire.TypeSignal:
		sig, err := execwire.ParseSignal(p)
		if err != nil {
			return err
		}
		s.e.mu.Lock()
		s.e.Signals = append(s.e.Signals, sig)
		s.e.mu.Unlock()
		if s.proc != nil {
			_ = s.proc.Signal(syscall.Signal(sig))
		}
	case execwire.TypeClose:
		return s.Close()
	}
	return nil
}

// Recv returns the program's next frame.
func (s *stream) Recv(ctx context.Context) (execwire.Type, []byte, error) {
	select {
	case f := <-s.frames:
		return f.t, f.p, nil
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-s.ctx.Done():
		return 0, nil, errors.New("the exec session was closed")
	}
}

// Close kills the program.
func (s *stream) Close() error {
	select {
	case <-s.ctx.Done():
		return nil
	default:
	}
	s.e.mu.Lock()
	s.e.Closed++
	s.e.mu.Unlock()
	if s.proc != nil {
		_ = s.proc.Kill()
	}
	if s.stdin != nil {
		s.stdin.Close()
	}
	s.cancel()
	return nil
}

// Snapshot returns what the sessions asked, under the lock.
func (e *Execer) Snapshot() (specs []execwire.Spec, resizes [][2]uint16, signals []int, opened, closed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]execwire.Spec(nil), e.Specs...), append([][2]uint16(nil), e.Resizes...), append([]int(nil), e.Signals...), e.Opened, e.Closed
}

var _ io.Closer = (*stream)(nil)
