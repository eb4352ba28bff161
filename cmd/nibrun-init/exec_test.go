package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/execwire"
)

// testStarter starts an exec child as the guest's reaper would, through
// the test binary (TestMain runs enterExec).
type testStarter struct{}

func (testStarter) startWatched(argv []string, attr *os.ProcAttr) (int, <-chan int, error) {
	attr.Env = append(attr.Env, "NIBRUN_INIT_TEST_ENTER=1")
	p, err := os.StartProcess("/proc/self/exe", argv, attr)
	if err != nil {
		return 0, nil, err
	}
	exit := make(chan int, 1)
	go func() {
		st, err := p.Wait()
		if err != nil {
			exit <- -1
			return
		}
		ws := st.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			exit <- 128 + int(ws.Signal())
			return
		}
		exit <- ws.ExitStatus()
	}()
	return p.Pid, exit, nil
}

// host is the host's end of an exec session in a test: it reads the
// frames the guest sends, and sends its own.
type host struct {
	t      *testing.T
	x      *execServer
	frames chan []byte
	out    [3]bytes.Buffer
}

func newHost(t *testing.T) *host {
	testenv.RequireRoot(t)
	h := &host{t: t, frames: make(chan []byte, 1024)}
	h.x = newExecServer("/", "/", []string{"PATH=/usr/bin:/bin", "APP_VAR=from-the-app"}, testStarter{}, func(b []byte) error {
		h.frames <- append([]byte(nil), b...)
		return nil
	})
	return h
}

func (h *host) send(t execwire.Type, session uint32, payload []byte) {
	h.t.Helper()
	b, err := execwire.AppendFrame(nil, t, session, payload)
	if err != nil {
		h.t.Fatal(err)
	}
	h.x.frame(b)
}

func (h *host) open(session uint32, spec execwire.Spec) {
	h.t.Helper()
	p, err := execwire.AppendSpec(nil, spec)
	if err != nil {
		h.t.Fatal(err)
	}
	h.send(execwire.TypeOpen, session, p)
}

// next returns the next frame the guest sent; data is collected in out.
func (h *host) next() execwire.Frame {
	h.t.Helper()
	select {
	case b := <-h.frames:
		f, err := execwire.ParseFrame(b)
		if err != nil {
			h.t.Fatal(err)
		}
		if f.Type == execwire.TypeData {
			st, d, err := execwire.ParseData(f.Payload)
			if err != nil {
				h.t.Fatal(err)
			}
			h.out[st].Write(d)
		}
		return f
	case <-time.After(time.Minute):
		h.t.Fatal("no frame from the guest within a minute")
	}
	return execwire.Frame{}
}

// exit reads frames until the session's exit.
func (h *host) exit() execwire.Exit {
	h.t.Helper()
	for {
		if f := h.next(); f.Type == execwire.TypeExit {
			e, err := execwire.ParseExit(f.Payload)
			if err != nil {
				h.t.Fatal(err)
			}
			return e
		}
	}
}

// until reads frames until stream st holds want.
func (h *host) until(st execwire.Stream, want string) {
	h.t.Helper()
	for !strings.Contains(h.out[st].String(), want) {
		if f := h.next(); f.Type == execwire.TypeExit {
			h.t.Fatalf("the session exited before %s said %q; it said %q", st, want, h.out[st].String())
		}
	}
}

func TestAnExecReturnsItsOutputAndExitStatusAsNobodyWithTheAppsEnvironment(t *testing.T) {
	h := newHost(t)
	h.open(7, execwire.Spec{
		Argv: []string{"/bin/sh", "-c", `echo "$(id -u):$(id -g) $APP_VAR $EXTRA $(pwd)"; echo oops >&2; exit 3`},
		Env:  []string{"EXTRA=from-the-client"}, Workdir: "/tmp", UID: 65534, GID: 65534,
	})
	e := h.exit()
	if e.Code != 3 || e.Error != "" {
		t.Fatalf("exit = %+v, want code 3", e)
	}
	if got := h.out[execwire.Stdout].String(); got != "65534:65534 from-the-app from-the-client /tmp\n" {
		t.Errorf("stdout = %q", got)
	}
	if got := h.out[execwire.Stderr].String(); got != "oops\n" {
		t.Errorf("stderr = %q", got)
	}
}

func TestStdinReachesTheProgramAndItsCloseEndsIt(t *testing.T) {
	h := newHost(t)
	h.open(1, execwire.Spec{Argv: []string{"/bin/cat"}, Stdin: true, UID: 65534, GID: 65534})
	h.send(execwire.TypeData, 1, execwire.AppendData(nil, execwire.Stdin, []byte("hello, guest\n")))
	h.send(execwire.TypeCloseStdin, 1, nil)
	if e := h.exit(); e.Code != 0 {
		t.Fatalf("exit = %+v", e)
	}
	if got := h.out[execwire.Stdout].String(); got != "hello, guest\n" {
		t.Errorf("stdout = %q", got)
	}
}

func TestAProgramNotInTheRootExits127SayingSo(t *testing.T) {
	h := newHost(t)
	h.open(2, execwire.Spec{Argv: []string{"/no/such/shell"}, UID: 65534, GID: 65534})
	if e := h.exit(); e.Code != execwire.CodeNotFound {
		t.Fatalf("exit = %+v, want 127", e)
	}
	if got := h.out[execwire.Stderr].String(); !strings.Contains(got, "cannot start /no/such/shell") {
		t.Errorf("stderr = %q", got)
	}
}

func TestAProgramNamedWithoutASlashIsFoundInTheAppsPath(t *testing.T) {
	h := newHost(t)
	h.open(7, execwire.Spec{Argv: []string{"sh", "-c", "echo found"}, UID: 65534, GID: 65534})
	if e := h.exit(); e.Code != 0 || h.out[execwire.Stdout].String() != "found\n" {
		t.Fatalf("exit = %+v, stdout %q, stderr %q", e, h.out[execwire.Stdout].String(), h.out[execwire.Stderr].String())
	}
	h.open(8, execwire.Spec{Argv: []string{"no-such-program"}, UID: 65534, GID: 65534})
	if e := h.exit(); e.Code != execwire.CodeNotFound {
		t.Fatalf("exit = %+v, want 127", e)
	}
	if got := h.out[execwire.Stderr].String(); !strings.Contains(got, `no no-such-program in the PATH "/usr/bin:/bin"`) {
		t.Errorf("stderr = %q", got)
	}
}

func TestATerminalSessionSeesAResizeAndCtrlCInterruptsTheProgram(t *testing.T) {
	if _, err := os.Stat("/usr/bin/stty"); err != nil {
		t.Skip("stty is not installed") // coreutils: always on Debian
	}
	h := newHost(t)
	h.open(3, execwire.Spec{Argv: []string{"/bin/sh", "-c", `stty size; read line; stty size; exec sleep 1000`}, TTY: true, Rows: 24, Cols: 80, Stdin: true, UID: 65534, GID: 65534})
	h.until(execwire.Stdout, "24 80")
	h.send(execwire.TypeResize, 3, execwire.AppendResize(nil, 50, 132))
	h.send(execwire.TypeData, 3, execwire.AppendData(nil, execwire.Stdin, []byte("\n")))
	h.until(execwire.Stdout, "50 132")
	h.send(execwire.TypeData, 3, execwire.AppendData(nil, execwire.Stdin, []byte{3})) // ^C
	if e := h.exit(); e.Code != 128+int32(syscall.SIGINT) {
		t.Fatalf("exit = %+v, want 130 (SIGINT)", e)
	}
}

func TestASignalFrameReachesTheProgram(t *testing.T) {
	h := newHost(t)
	h.open(4, execwire.Spec{Argv: []string{"/bin/sleep", "1000"}, UID: 65534, GID: 65534})
	h.send(execwire.TypeSignal, 4, []byte{byte(syscall.SIGTERM)})
	if e := h.exit(); e.Code != 128+int32(syscall.SIGTERM) {
		t.Fatalf("exit = %+v, want 143 (SIGTERM)", e)
	}
}

// A host that grants nothing more gets one window and no more, however
// much the program writes; closing the session kills the program.
func TestTheGuestSendsNoMoreOutputThanTheHostGranted(t *testing.T) {
	h := newHost(t)
	h.open(5, execwire.Spec{Argv: []string{"/usr/bin/yes"}, UID: 65534, GID: 65534})
	for h.out[execwire.Stdout].Len() < execwire.DefaultWindow {
		if f := h.next(); f.Type == execwire.TypeExit {
			t.Fatal("yes exited")
		}
	}
	h.send(execwire.TypeClose, 5, nil)
	if e := h.exit(); e.Code != 128+int32(syscall.SIGKILL) {
		t.Fatalf("exit = %+v, want 137 (SIGKILL)", e)
	}
	if n := h.out[execwire.Stdout].Len(); n != execwire.DefaultWindow {
		t.Fatalf("the guest sent %d bytes against a window of %d", n, execwire.DefaultWindow)
	}
}

func TestStdinBeyondTheGrantedWindowEndsTheSession(t *testing.T) {
	h := newHost(t)
	h.open(6, execwire.Spec{Argv: []string{"/bin/sleep", "1000"}, Stdin: true, UID: 65534, GID: 65534})
	chunk := execwire.AppendData(nil, execwire.Stdin, make([]byte, execwire.MaxData))
	for sent := 0; sent <= execwire.DefaultWindow; sent += execwire.MaxData {
		h.send(execwire.TypeData, 6, chunk)
	}
	if e := h.exit(); e.Code != 128+int32(syscall.SIGKILL) {
		t.Fatalf("exit = %+v, want 137: a host that overruns its window loses the session", e)
	}
}
