package execs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon/execs"
	"alpnib.dev/nibrunner/daemon/execs/exectest"
	"alpnib.dev/nibrunner/route"
)

// waker stands in for the daemon: "stopped" is refused as the daemon's
// Wake refuses a stopped app; every other app is up. It can hold a wake
// until released.
type waker struct {
	mu    sync.Mutex
	woken []string
	hold  chan struct{}
}

func (w *waker) Wake(ctx context.Context, app string) error {
	if app == "stopped" {
		return fmt.Errorf("wake %s: %w", app, route.ErrNotRunning)
	}
	w.mu.Lock()
	w.woken = append(w.woken, app)
	hold := w.hold
	w.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

type rig struct {
	sessions *execs.Sessions
	execer   *exectest.Execer
	waker    *waker
	journal  *control.Journal
	client   *control.Client
	stop     func()
}

func newRig(t *testing.T, s *execs.Sessions) *rig {
	t.Helper()
	r := &rig{sessions: s, execer: &exectest.Execer{}, waker: &waker{}, journal: control.NewJournal(0)}
	s.Execer = r.execer
	s.SetWaker(r.waker)
	sock := filepath.Join(t.TempDir(), control.SocketName)
	l, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &control.Server{Execs: s, Journal: r.journal, ExecConflicts: []error{execs.ErrBusy}, Conflicts: []error{route.ErrNotRunning}}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); srv.Serve(ctx, sock, l) }()
	go func() { defer wg.Done(); s.Start(ctx) }()
	r.stop = func() { cancel(); wg.Wait() }
	t.Cleanup(r.stop)
	r.client = control.NewClient(sock)
	return r
}

func (r *rig) exec(t *testing.T, app string, req control.ExecRequest, sio control.ExecIO) (int32, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := r.client.Exec(ctx, app, req)
	if err != nil {
		return 0, "", err
	}
	exit, err := control.RunExec(ctx, conn, sio)
	return exit.Code, exit.Error, err
}

func TestAnExecReturnsItsOutputAndExitStatusAndIsAnEvent(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	var out, errOut bytes.Buffer
	code, _, err := r.exec(t, "web", control.ExecRequest{Argv: []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"}, UID: 65534, GID: 65534},
		control.ExecIO{Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 || out.String() != "hello\n" || errOut.String() != "oops\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 3, hello, oops", code, out.String(), errOut.String())
	}
	// The event is recorded once the relay has returned.
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, more := r.journal.After(0)
		if len(evs) > 0 {
			e := evs[0]
			if e.Subject != control.SubjectExec || e.ID != "web" || e.Verb != control.VerbExec || e.ExitCode == nil || *e.ExitCode != 3 || e.Argv[0] != "sh" || e.PeerUID == nil {
				t.Fatalf("the event is %+v", e)
			}
			break
		}
		select {
		case <-more:
		case <-time.After(time.Until(deadline)):
			t.Fatal("no exec event was recorded")
		}
	}
}

func TestStdinReachesTheProgramAndItsEndClosesIt(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	in := strings.Repeat("line of stdin\n", 100000) // 1.4 MB: several windows
	var out bytes.Buffer
	code, _, err := r.exec(t, "web", control.ExecRequest{Argv: []string{"wc", "-c"}, Stdin: true},
		control.ExecIO{Stdin: strings.NewReader(in), Stdout: &out, Stderr: io.Discard})
	if err != nil || code != 0 {
		t.Fatalf("exit %d, %v", code, err)
	}
	if got := strings.TrimSpace(out.String()); got != fmt.Sprint(len(in)) {
		t.Fatalf("the program counted %s bytes of stdin; %d were sent", got, len(in))
	}
}

func TestAnExecIntoAStoppedAppIsRefusedWithItsSentence(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	_, _, err := r.exec(t, "stopped", control.ExecRequest{Argv: []string{"true"}}, control.ExecIO{})
	if err == nil || !strings.Contains(err.Error(), "it is not running") || !strings.Contains(err.Error(), "set its desiredState to running or on-request") {
		t.Fatalf("the refusal is %v", err)
	}
	if _, _, _, opened, _ := r.execer.Snapshot(); opened != 0 {
		t.Fatalf("%d programs were started in a stopped app", opened)
	}
}

func TestASessionCountsAsTrafficFromItsWakeToItsEnd(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	r.waker.hold = make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, _, err := r.exec(t, "sleepy", control.ExecRequest{Argv: []string{"true"}}, control.ExecIO{})
		done <- err
	}()
	// While the wake is under way the app is busy already.
	for {
		if _, busy := r.sessions.Activity("sleepy"); busy {
			break
		}
		runtime.Gosched()
	}
	close(r.waker.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.stop() // the relay has returned once the component has stopped
	last, busy := r.sessions.Activity("sleepy")
	if busy || last.IsZero() {
		t.Fatalf("after the session: busy %v, last %v; want not busy and a time", busy, last)
	}
}

func TestSessionsBeyondTheCapAreRefused(t *testing.T) {
	r := newRig(t, &execs.Sessions{MaxPerApp: 1})
	stdin, hold := io.Pipe()
	defer hold.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := r.client.Exec(ctx, "web", control.ExecRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := control.RunExec(ctx, conn, control.ExecIO{Stdin: stdin, Stdout: io.Discard})
		first <- err
	}()
	_, _, err = r.exec(t, "web", control.ExecRequest{Argv: []string{"true"}}, control.ExecIO{})
	if err == nil || !strings.Contains(err.Error(), "1 sessions are open into it") {
		t.Fatalf("the second session answered %v", err)
	}
	// Another app has sessions of its own.
	if _, _, err := r.exec(t, "other", control.ExecRequest{Argv: []string{"true"}}, control.ExecIO{}); err != nil {
		t.Fatal(err)
	}
	hold.Close()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestAnIdleSessionIsClosedAndSaysWhy(t *testing.T) {
	r := newRig(t, &execs.Sessions{Idle: 200 * time.Millisecond})
	code, why, err := r.exec(t, "web", control.ExecRequest{Argv: []string{"sleep", "600"}}, control.ExecIO{})
	// The program ends killed (137) or abandoned (-1), as the race goes;
	// either way the client is told why.
	if err != nil || (code != -1 && code != 128+9) || why != "the session carried nothing for 200ms and was closed" {
		t.Fatalf("the idle session ended %d %q, %v; want it killed, and the sentence", code, why, err)
	}
	if _, _, _, _, closed := r.execer.Snapshot(); closed != 1 {
		t.Fatalf("the guest was told to close %d sessions; want 1", closed)
	}
}

func TestAClientThatGoesAwayEndsTheProgram(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := r.client.Exec(ctx, "web", control.ExecRequest{Argv: []string{"sleep", "600"}})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	cancel()
	r.stop()
	if _, _, _, _, closed := r.execer.Snapshot(); closed != 1 {
		t.Fatalf("the guest was told to close %d sessions; want 1", closed)
	}
}

func TestAnExecIsAskedWithItsSpecWhole(t *testing.T) {
	r := newRig(t, &execs.Sessions{})
	_, _, err := r.exec(t, "web", control.ExecRequest{Argv: []string{"true", "a b"}, Env: []string{"K=V"}, Workdir: "/", UID: 7, GID: 8},
		control.ExecIO{})
	if err != nil {
		t.Fatal(err)
	}
	specs, _, _, _, _ := r.execer.Snapshot()
	s := specs[0]
	if len(s.Argv) != 2 || s.Argv[1] != "a b" || s.Env[0] != "K=V" || s.Workdir != "/" || s.UID != 7 || s.GID != 8 {
		t.Fatalf("the guest was asked %+v", s)
	}
	if !errors.Is(execs.ErrNotRunning, route.ErrNotRunning) {
		t.Fatal("execs.ErrNotRunning is route's")
	}
}
