// Package execs is the daemon's exec sessions, a component of its own: it
// opens a program in an app's live guest (waking an on-request app first),
// relays the session's frames between a control-socket client and the
// guest, caps the sessions open at once per app, closes one that is idle
// too long, and tells the planner an app with a session open is busy, so
// an on-request app does not sleep under it.
//
// It knows the daemon only as a Waker and the VMM only as a vmm.Execer;
// the control socket (package control) speaks to it as control.Execs.
package execs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/execwire"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
)

// Waker brings an app up and returns once it is healthy (daemon.Daemon):
// at once for an app that is up, a restore for one that sleeps, and an
// error wrapping route.ErrNotRunning for one that is stopped.
type Waker interface {
	Wake(ctx context.Context, app string) error
}

// Defaults of Sessions' limits.
const (
	DefaultMaxPerApp = 4
	DefaultIdle      = 30 * time.Minute
)

// ErrBusy is what an exec beyond the per-app cap wraps.
var ErrBusy = errors.New("too many exec sessions are open into this app")

// ErrNotRunning is what an exec into a stopped app wraps.
var ErrNotRunning = route.ErrNotRunning

// ErrClosed is what an exec answers once the daemon is stopping.
var ErrClosed = errors.New("the daemon is stopping")

// Sessions is the component. Set its fields before Start; SetWaker may
// come later (the daemon is made after the VMM).
type Sessions struct {
	Execer vmm.Execer
	// MaxPerApp caps the sessions open into one app (DefaultMaxPerApp
	// when ≤ 0); Idle closes a session that carried no frame either way
	// for that long (DefaultIdle when ≤ 0).
	MaxPerApp int
	Idle      time.Duration

	waker atomic.Pointer[Waker]

	mu      sync.Mutex
	stopped bool
	open    map[string]int
	last    map[string]time.Time
	live    map[*session]struct{}
	relays  sync.WaitGroup
}

// SetWaker names what wakes an app before an exec.
func (s *Sessions) SetWaker(w Waker) { s.waker.Store(&w) }

var _ control.Execs = (*Sessions)(nil)

// Open reserves one of app's sessions, wakes app, and opens spec in its
// guest. The reservation counts as traffic from the start, so an app woken
// for the exec does not go back to sleep before it runs.
func (s *Sessions) Open(ctx context.Context, app string, spec execwire.Spec) (control.ExecSession, error) {
	max := s.MaxPerApp
	if max <= 0 {
		max = DefaultMaxPerApp
	}
	s.mu.Lock()
	switch {
	case s.stopped:
		s.mu.Unlock()
		return nil, fmt.Errorf("exec into %s: %w; run it again once nibrunnerd is back", app, ErrClosed)
	case s.open[app] >= max:
		s.mu.Unlock()
		return nil, fmt.Errorf("exec into %s: %d sessions are open into it, the most this host allows at once; end one first: %w", app, max, ErrBusy)
	}
	if s.open == nil {
		s.open, s.last, s.live = map[string]int{}, map[string]time.Time{}, map[*session]struct{}{}
	}
	s.open[app]++
	s.relays.Add(1)
	s.mu.Unlock()

	st, err := s.start(ctx, app, spec)
	if err != nil {
		s.release(app, nil)
		return nil, err
	}
	x := &session{s: s, app: app, stream: st, closed: make(chan struct{})}
	s.mu.Lock()
	stopped := s.stopped
	s.live[x] = struct{}{}
	s.mu.Unlock()
	if stopped {
		x.close()
	}
	return x, nil
}

func (s *Sessions) start(ctx context.Context, app string, spec execwire.Spec) (vmm.ExecStream, error) {
	if s.Execer == nil {
		return nil, fmt.Errorf("exec into %s: this host's VMM cannot run a program in a guest", app)
	}
	if w := s.waker.Load(); w != nil {
		if err := (*w).Wake(ctx, app); err != nil {
			if errors.Is(err, route.ErrNotRunning) {
				return nil, fmt.Errorf("exec into %s: it is not running (stopped, or not in the accepted desired.json): an exec runs only in a live guest; set its desiredState to running or on-request and exec again: %w", app, err)
			}
			return nil, fmt.Errorf("exec into %s: waking it first: %w", app, err)
		}
	}
	st, err := s.Execer.Exec(ctx, app, spec)
	if err != nil {
		return nil, fmt.Errorf("exec into %s: %w", app, err)
	}
	return st, nil
}

// release ends one of app's sessions.
func (s *Sessions) release(app string, x *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[app]--; s.open[app] <= 0 {
		delete(s.open, app)
	}
	s.last[app] = time.Now()
	delete(s.live, x)
	s.relays.Done()
}

// Activity says when app last had an exec session open, and whether one
// is open now (the planner reads it as traffic, beside the proxy's).
func (s *Sessions) Activity(app string) (last time.Time, busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[app] > 0 {
		return time.Now(), true
	}
	return s.last[app], false
}

// Start runs the component until ctx ends, then closes every session (the
// guests kill their programs) and waits for their relays to return.
func (s *Sessions) Start(ctx context.Context) error {
	<-ctx.Done()
	s.mu.Lock()
	s.stopped = true
	live := make([]*session, 0, len(s.live))
	for x := range s.live {
		live = append(live, x)
	}
	s.mu.Unlock()
	for _, x := range live {
		x.close()
	}
	s.relays.Wait()
	return nil
}

// session is one open exec.
type session struct {
	s      *Sessions
	app    string
	stream vmm.ExecStream
	once   sync.Once
	closed chan struct{}
	why    atomic.Pointer[string]
}

// close abandons the session: the relay ends and the guest kills the
// program.
func (x *session) close() {
	x.once.Do(func() {
		// The guest is told first: once closed is closed the relay may
		// end and the client hear of it.
		_ = x.stream.Close()
		close(x.closed)
	})
}

// Relay carries frames between conn and the guest until the program's
// exit, then closes conn. A client that goes away closes the session.
func (x *session) Relay(ctx context.Context, conn io.ReadWriteCloser) execwire.Exit {
	defer x.s.release(x.app, x)
	defer x.close()
	idle := x.s.Idle
	if idle <= 0 {
		idle = DefaultIdle
	}
	var seen atomic.Int64
	touch := func() { seen.Store(time.Now().UnixNano()) }
	touch()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		<-x.closed
		cancel()
	}()
	// The idle watch: a session that carried nothing for idle is closed.
	go func() {
		t := time.NewTimer(idle)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				left := idle - time.Since(time.Unix(0, seen.Load()))
				if left <= 0 {
					why := fmt.Sprintf("the session carried nothing for %s and was closed", idle)
					x.why.Store(&why)
					x.close()
					return
				}
				t.Reset(left)
			}
		}
	}()
	// The client's frames go to the guest as they come; the stdout and
	// stderr credit the client grants goes with them, so the guest sends
	// no more than the client has room for.
	fromClient := make(chan struct{})
	go func() {
		defer close(fromClient)
		r := execwire.NewReader(conn)
		for {
			f, err := r.ReadFrame()
			if err != nil {
				x.close()
				return
			}
			touch()
			switch f.Type {
			case execwire.TypeClose:
				x.close()
				return
			case execwire.TypeData, execwire.TypeWindow, execwire.TypeResize, execwire.TypeSignal, execwire.TypeCloseStdin:
				if err := x.stream.Send(f.Type, append([]byte(nil), f.Payload...)); err != nil {
					x.close()
					return
				}
			default:
				x.close()
				return
			}
		}
	}()
	exit := x.toClient(ctx, conn, touch)
	conn.Close()
	<-fromClient
	if why := x.why.Load(); why != nil && exit.Error == "" {
		exit.Error = *why
	}
	return exit
}

// toClient writes the guest's frames to conn, one at a time: a client
// that reads slowly holds the guest back through the credit it grants,
// and nothing is buffered here beyond one frame.
func (x *session) toClient(ctx context.Context, conn io.Writer, touch func()) execwire.Exit {
	var b []byte
	for {
		t, p, err := x.stream.Recv(ctx)
		if err != nil {
			// The client hears why the session ended without the
			// program's exit (an idle close, the daemon stopping), if it
			// is still there to hear it.
			e := execwire.Exit{Code: -1, Error: lostSentence(x.why.Load(), err)}
			if b, ferr := execwire.AppendFrame(b[:0], execwire.TypeExit, 0, execwire.AppendExit(nil, e)); ferr == nil {
				_, _ = conn.Write(b)
			}
			return e
		}
		touch()
		if t == execwire.TypeExit {
			e, perr := execwire.ParseExit(p)
			if perr != nil {
				e = execwire.Exit{Code: -1, Error: perr.Error()}
			}
			// A program the host had killed (an idle close) exits by
			// its signal; the client hears why it was killed.
			if why := x.why.Load(); why != nil && e.Error == "" {
				e.Error = *why
			}
			if b, err = execwire.AppendFrame(b[:0], t, 0, execwire.AppendExit(nil, e)); err == nil {
				_, _ = conn.Write(b)
			}
			return e
		}
		b, err = execwire.AppendFrame(b[:0], t, 0, p)
		if err == nil {
			_, err = conn.Write(b)
		}
		if err != nil {
			return execwire.Exit{Code: -1, Error: "the client went away: " + err.Error()}
		}
	}
}

func lostSentence(why *string, err error) string {
	if why != nil {
		return *why
	}
	if errors.Is(err, context.Canceled) {
		return "the session was closed before the program exited"
	}
	return err.Error()
}
