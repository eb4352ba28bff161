package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon/execs"
	"alpnib.dev/nibrunner/daemon/execs/exectest"
	"alpnib.dev/nibrunner/execwire"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/vmm"
)

// execRig serves the control socket with exec sessions that run here, in
// root standing in for the app's root: tar's -C DIR is taken under root.
func execRig(t *testing.T, root string) *control.Client {
	t.Helper()
	ex := &exectest.Execer{Rewrite: func(_ string, s execwire.Spec) []string {
		argv := append([]string(nil), s.Argv...)
		for i := range argv {
			if i > 0 && argv[i-1] == "-C" {
				argv[i] = filepath.Join(root, argv[i])
			}
		}
		return argv
	}}
	return serveExecs(t, &execs.Sessions{Execer: ex})
}

// serveExecs serves the control socket with s's exec sessions until the
// test ends.
func serveExecs(t *testing.T, s *execs.Sessions) *control.Client {
	t.Helper()
	sock := filepath.Join(t.TempDir(), control.SocketName)
	l, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		(&control.Server{Execs: s, ExecConflicts: []error{execs.ErrBusy}}).Serve(ctx, sock, l)
	}()
	go func() { defer wg.Done(); s.Start(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return control.NewClient(sock)
}

func sum(t *testing.T, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestACopyInAndOutKeepsTheFileAndItsMode(t *testing.T) {
	root, local := t.TempDir(), t.TempDir()
	c := execRig(t, root)
	ctx := context.Background()
	if err := os.MkdirAll(filepath.Join(root, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(local, "blob")
	b := make([]byte, 3<<20)
	rand.Read(b)
	if err := os.WriteFile(src, b, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := copyIn(ctx, c, src, copyArg{app: "web", path: "/data/"}); err != nil {
		t.Fatal(err)
	}
	if sum(t, filepath.Join(root, "data", "blob")) != sha256.Sum256(b) {
		t.Fatal("the copy in changed the file")
	}
	back := filepath.Join(local, "back")
	if err := copyOut(ctx, c, copyArg{app: "web", path: "/data/blob"}, back, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if sum(t, back) != sha256.Sum256(b) {
		t.Fatal("the round trip changed the file")
	}
	if fi, err := os.Stat(back); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("the copy's mode is %v (%v); want 0640", fi.Mode(), err)
	}
}

func TestACopyOutOfAMissingPathSaysWhatTheGuestsTarSaid(t *testing.T) {
	c := execRig(t, t.TempDir())
	err := copyOut(context.Background(), c, copyArg{app: "web", path: "/nope"}, t.TempDir(), os.Stderr)
	if err == nil || !strings.Contains(err.Error(), "the guest's tar exited") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("got %v", err)
	}
}

func TestAGuestsTarCannotWriteThroughALinkItMade(t *testing.T) {
	outside := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "x", Typeflag: tar.TypeSymlink, Linkname: outside})
	tw.WriteHeader(&tar.Header{Name: "x/planted", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1})
	tw.Write([]byte("!"))
	tw.Close()
	err := extractTar(&buf, filepath.Join(t.TempDir(), "x"), "x")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the archive wrote through its link")
	}
}

func TestAGuestsTarCannotNameAPathOutsideTheCopy(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Name: "x/../../escape", Typeflag: tar.TypeReg, Mode: 0o644})
	tw.Close()
	if err := extractTar(&buf, filepath.Join(t.TempDir(), "x"), "x"); err == nil || !strings.Contains(err.Error(), "not under x") {
		t.Fatalf("got %v", err)
	}
}

func TestAnExecsExitStatusIsTheCommands(t *testing.T) {
	c := execRig(t, t.TempDir())
	var out bytes.Buffer
	err := runExec(context.Background(), c, "web", control.ExecRequest{Argv: []string{"sh", "-c", "echo hi; exit 7"}}, nil, &out, &out)
	var code exitCode
	if !errors.As(err, &code) || code != 7 || out.String() != "hi\n" {
		t.Fatalf("got %v, %q; want exit status 7 and hi", err, out.String())
	}
}

func TestExecUserFlag(t *testing.T) {
	for in, want := range map[string][2]uint32{"": {65534, 65534}, "0": {0, 0}, "10:20": {10, 20}} {
		u, g, err := parseUser(in)
		if err != nil || u != want[0] || g != want[1] {
			t.Errorf("--user %q: %d:%d %v", in, u, g, err)
		}
	}
	if _, _, err := parseUser("root"); err == nil {
		t.Error("--user root was taken")
	}
}

// execVMM is a VMM that can run programs (here, on this machine).
type execVMM struct {
	vmm.VMM
	*exectest.Execer
}

func TestTheExecSectionCapsSessionsPerAppAndClosesAnIdleOne(t *testing.T) {
	cfgPath := ctlConfig(t, t.TempDir())
	f, _ := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("[exec]\nmax_sessions_per_app = 1\nidle_timeout_ms = 1000\n")
	f.Close()
	cfg, err := hostconfig.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	sessions := execSessions(cfg, execVMM{Execer: &exectest.Execer{}})
	c := serveExecs(t, sessions)
	ctx, cancel := context.WithCancel(context.Background())
	// A session that keeps talking is never idle, and holds the one place.
	conn, err := c.Exec(ctx, "web", control.ExecRequest{Argv: []string{"sh", "-c", "while :; do echo; sleep 0.1; done"}})
	if err != nil {
		t.Fatal(err)
	}
	talking := make(chan error, 1)
	go func() {
		_, err := control.RunExec(ctx, conn, control.ExecIO{Stdout: io.Discard})
		talking <- err
	}()
	err = runExec(context.Background(), c, "web", control.ExecRequest{Argv: []string{"true"}}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "1 sessions are open into it, the most this host allows at once") {
		t.Fatalf("a second session into the app answered %v; want it refused", err)
	}
	cancel()
	<-talking
	// The client has gone; the daemon's relay hears of it a moment later
	// and gives the place back.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, busy := sessions.Activity("web"); !busy {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled session still holds its place after 10s")
		}
	}
	// A session that carries nothing for a second is closed, saying so.
	var errOut bytes.Buffer
	err = runExec(context.Background(), c, "web", control.ExecRequest{Argv: []string{"sleep", "600"}}, nil, io.Discard, &errOut)
	var code exitCode
	if !errors.As(err, &code) || !strings.Contains(errOut.String(), "nibrunnerd: exec into web: the session carried nothing for 1s and was closed") {
		t.Fatalf("the idle session ended %v, saying %q", err, errOut.String())
	}
}
