package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/reported"
)

var errNotNow = errors.New("not now")

// apps is a daemon stand-in that remembers what it was asked.
type apps struct {
	mu    sync.Mutex
	calls []string
	fail  map[string]error
}

func (a *apps) Sleep(_ context.Context, app string) error { return a.call("sleep " + app) }
func (a *apps) Wake(_ context.Context, app string) error  { return a.call("wake " + app) }
func (a *apps) call(c string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, c)
	return a.fail[c]
}

func serve(t *testing.T, a *apps) (*Client, string, string) {
	t.Helper()
	return serveWith(t, func(dir string) *Server {
		return &Server{Apps: a, ReportPath: filepath.Join(dir, "reported.json"), Conflicts: []error{errNotNow}}
	})
}

// serveWith runs the server made for a fresh short folder and returns a
// client, the socket and the report's path.
func serveWith(t *testing.T, newServer func(dir string) *Server) (*Client, string, string) {
	t.Helper()
	// Unix socket paths are short; t.TempDir's can be too long.
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := SocketPath(dir)
	s := newServer(dir)
	report := s.ReportPath
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, sock) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the socket outlived its server: %v", err)
		}
	})
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			t.Fatal("the server never listened")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return NewClient(sock), sock, report
}

func TestTheSocketIsOnlyForItsOwner(t *testing.T) {
	_, sock, _ := serve(t, &apps{})
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, want a 0600 socket", fi.Mode())
	}
}

func TestSleepAndWakeReachTheDaemonForTheNamedApp(t *testing.T) {
	a := &apps{}
	c, _, _ := serve(t, a)
	ctx := context.Background()
	if err := c.Sleep(ctx, "counter"); err != nil {
		t.Fatal(err)
	}
	if err := c.Wake(ctx, "counter"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(a.calls, ", "); got != "sleep counter, wake counter" {
		t.Fatalf("the daemon was asked: %s", got)
	}
}

func TestTheDaemonsRefusalReachesTheCallerInItsOwnWords(t *testing.T) {
	a := &apps{fail: map[string]error{
		"sleep web": fmt.Errorf("sleep web: desired.json asks it running: %w", errNotNow),
		"wake web":  errors.New("wake web: the disk is on fire"),
	}}
	c, _, _ := serve(t, a)
	err := c.Sleep(context.Background(), "web")
	if err == nil || err.Error() != "sleep web: desired.json asks it running: not now" {
		t.Fatalf("sleep: %v", err)
	}
	if err := c.Wake(context.Background(), "web"); err == nil || err.Error() != "wake web: the disk is on fire" {
		t.Fatalf("wake: %v", err)
	}
}

func TestWakingAnAppTheReportDoesNotHoldSaysThereIsNoSuchApp(t *testing.T) {
	a := &apps{fail: map[string]error{"wake blog": errors.New("wake blog: this app is not running")}}
	c, _, report := serve(t, a)
	writeReport(t, report, rep("", inst("web", reported.InstanceRunning, "")))
	err := c.Wake(context.Background(), "blog")
	if err == nil || err.Error() != `no app "blog" on this host: the report has no instance of it` {
		t.Fatalf("wake of an app not on this host: %v", err)
	}
}

func TestTheReportIsTheFileTheDaemonWrote(t *testing.T) {
	c, _, report := serve(t, &apps{})
	if _, err := c.Report(context.Background()); err == nil || !strings.Contains(err.Error(), "not written its report yet") {
		t.Fatalf("before the first report: %v", err)
	}
	want := `{"hostId":"h","instances":[]}`
	if err := os.WriteFile(report, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := c.Report(context.Background())
	if err != nil || string(got) != want {
		t.Fatalf("report %q, %v", got, err)
	}
}

func TestAClientWithNoDaemonSaysHowToStartOne(t *testing.T) {
	sock := filepath.Join(t.TempDir(), SocketName)
	err := NewClient(sock).Sleep(context.Background(), "counter")
	if !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("%v, want ErrNoDaemon", err)
	}
	if want := "no nibrunnerd is listening on " + sock + "; start it with nibrunnerd serve"; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("%q does not start with %q", err, want)
	}
}

func TestASecondServerRefusesASocketALiveOneHolds(t *testing.T) {
	_, sock, _ := serve(t, &apps{})
	s := &Server{Apps: &apps{}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.ListenAndServe(ctx, sock); err == nil || !strings.Contains(err.Error(), "another nibrunnerd") {
		t.Fatalf("%v", err)
	}
}

func TestAStaleSocketFromADeadDaemonIsReplaced(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := SocketPath(dir)
	if err := os.WriteFile(sock, nil, 0o600); err != nil { // what a crash leaves
		t.Fatal(err)
	}
	a := &apps{}
	s := &Server{Apps: a}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.ListenAndServe(ctx, sock) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err = NewClient(sock).Wake(context.Background(), "x"); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if e := <-done; e != nil || err != nil {
		t.Fatalf("serve %v, wake %v", e, err)
	}
}
