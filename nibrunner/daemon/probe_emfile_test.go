package daemon

import (
	"context"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/health"
)

// A probe the daemon cannot make because it is out of descriptors is not
// the app's failure (issue 28: at the limit, a healthy app ended failed,
// out of restarts). The descriptors run out in a child process of the
// test, so nothing else of the test binary runs short.
func TestAProbeTheDaemonIsTooShortOfDescriptorsToMakeIsNotCountedAgainstTheApp(t *testing.T) {
	if os.Getenv("NIB_PROBE_EMFILE_CHILD") == "1" {
		probeOutOfDescriptors(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAProbeTheDaemonIsTooShortOfDescriptorsToMakeIsNotCountedAgainstTheApp$", "-test.v")
	cmd.Env = append(os.Environ(), "NIB_PROBE_EMFILE_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	t.Logf("the child:\n%s", out)
}

func probeOutOfDescriptors(t *testing.T) {
	closed := closedEndpoint(t)
	var logged []string
	newProber := func(endpoint string) *prober {
		return &prober{
			endpoint: endpoint, timeout: time.Second,
			check: health.Check{Interval: time.Second, HealthyThreshold: 1, UnhealthyThreshold: 1},
			rec:   health.Started(time.Now().Add(-time.Hour)),
			logf:  func(f string, a ...any) { logged = append(logged, f) },
			clock: clock.Real,
		}
	}
	// With descriptors to spare, a refused connection is the app's.
	refused := newProber(closed)
	ok, err := refused.probe(context.Background())
	if changed, state := refused.observe(ok, err); ok || !changed || state != health.Failed {
		t.Fatalf("a refused probe: ok %v, changed %v, state %s (%v)", ok, changed, state, err)
	}
	// Now none to spare: the same probe cannot even open its socket.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = 64
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var held []*os.File
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		held = append(held, f)
	}
	p := newProber(closed)
	ok, err = p.probe(context.Background())
	if ok || !outOfFiles(err) {
		t.Fatalf("the probe with no descriptors left: ok %v, %v; want EMFILE", ok, err)
	}
	for range 3 {
		if changed, state := p.observe(ok, err); changed || state != health.Starting {
			t.Fatalf("an unmade probe changed the state to %s", state)
		}
	}
	if r := p.record(); r.Failures != 0 {
		t.Fatalf("%d failures counted for probes the daemon could not make", r.Failures)
	}
	if len(logged) != 1 {
		t.Fatalf("logged %d times, want once: %q", len(logged), logged)
	}
	for _, f := range held {
		f.Close()
	}
}

// closedEndpoint is a loopback address nothing listens on.
func closedEndpoint(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
