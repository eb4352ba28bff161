package qemu

import (
	"context"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/execwire"
	"alpnib.dev/nibrunner/vmm"
)

// execOutput runs spec in app to its end, granting credit back as it
// reads, and returns its stdout, stderr and exit. check sees the stream
// after every frame.
func execOutput(t *testing.T, ctx context.Context, v *VMM, app string, spec execwire.Spec, check func(*execStream)) (string, string, execwire.Exit) {
	t.Helper()
	es, err := v.Exec(ctx, app, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	var out [3]strings.Builder
	win := [3]*execwire.Window{nil, execwire.NewWindow(execwire.DefaultWindow), execwire.NewWindow(execwire.DefaultWindow)}
	for {
		typ, p, err := es.Recv(ctx)
		if err != nil {
			t.Fatalf("exec %v: %v", spec.Argv, err)
		}
		if check != nil {
			check(es.(*execStream))
		}
		switch typ {
		case execwire.TypeData:
			st, d, err := execwire.ParseData(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := win[st].Received(len(d)); err != nil {
				t.Fatalf("the guest overran its window: %v", err)
			}
			if out[st].Len() < 1<<20 {
				out[st].Write(d)
			}
			if g := win[st].Consumed(len(d)); g > 0 {
				if err := es.Send(execwire.TypeWindow, execwire.AppendWindow(nil, st, g)); err != nil {
					t.Fatal(err)
				}
			}
		case execwire.TypeExit:
			e, err := execwire.ParseExit(p)
			if err != nil {
				t.Fatal(err)
			}
			return out[execwire.Stdout].String(), out[execwire.Stderr].String(), e
		}
	}
}

// execApp boots the counter server as app and waits until it answers.
func execApp(t *testing.T, ctx context.Context, app string) (*VMM, vmm.Spec) {
	t.Helper()
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	spec := f.spec(t, app)
	st := started(t, ctx, v, spec, &logs)
	get(t, st.Endpoint, "/count", 2*time.Minute)
	return v, spec
}

func TestAnExecInAGuestReturnsItsOutputAndExitStatusAsNobody(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	v, spec := execApp(t, ctx, "execd")

	stdout, _, e := execOutput(t, ctx, v, spec.AppID, execwire.Spec{Argv: []string{"/app/counter"}, Env: []string{"EXIT_WITH=3"}, UID: 65534, GID: 65534}, nil)
	if e.Code != 3 || stdout != "counter exits with 3\n" {
		t.Fatalf("exec: stdout %q, exit %+v; want \"counter exits with 3\" and 3", stdout, e)
	}
	stdout, _, e = execOutput(t, ctx, v, spec.AppID, execwire.Spec{Argv: []string{"/app/counter"}, Env: []string{"PRINT_STATUS=1"}, UID: 65534, GID: 65534}, nil)
	if e.Code != 0 || !strings.HasPrefix(stdout, "euid=65534\n") || !strings.Contains(stdout, "NoNewPrivs:\t1") {
		t.Fatalf("exec as nobody: exit %+v, stdout %q", e, stdout)
	}
	_, stderr, e := execOutput(t, ctx, v, spec.AppID, execwire.Spec{Argv: []string{"/bin/sh"}, UID: 65534, GID: 65534}, nil)
	if e.Code != execwire.CodeNotFound || !strings.Contains(stderr, "cannot start /bin/sh") {
		t.Fatalf("a shell the app's root lacks: exit %+v, stderr %q; want 127 saying so (no shell is injected)", e, stderr)
	}
	if _, err := v.Exec(ctx, "no-such-app", execwire.Spec{Argv: []string{"/app/counter"}}); err == nil {
		t.Fatal("an exec into an app with no guest succeeded")
	}
}

// A reader that takes its time holds the host to what it granted: the
// session's queue never holds more than the two output windows.
func TestASlowExecReaderKeepsTheHostsQueueWithinTheWindow(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	v, spec := execApp(t, ctx, "slowread")

	const total = 16 << 20
	most, frames := 0, 0
	_, _, e := execOutput(t, ctx, v, spec.AppID, execwire.Spec{Argv: []string{"/app/counter"}, Env: []string{"STREAM_BYTES=16777216"}, UID: 65534, GID: 65534}, func(s *execStream) {
		s.mu.Lock()
		most = max(most, s.queued)
		s.mu.Unlock()
		if frames++; frames%16 == 0 {
			time.Sleep(20 * time.Millisecond) // slow: the guest gets ahead of us if it can
		}
	})
	if e.Code != 0 {
		t.Fatalf("exit %+v", e)
	}
	// Each frame's payload adds its stream's byte to the data.
	if bound := execwire.DefaultWindow + execwire.DefaultWindow/8; most > bound {
		t.Fatalf("the host queued %d bytes of %d streamed, more than the %d-byte window allows", most, total, execwire.DefaultWindow)
	}
	t.Logf("streamed %d bytes; the most the host held was %d", total, most)
}
