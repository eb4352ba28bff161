package execs_test

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon/execs"
)

// rssBytes is this process's resident set (VmRSS, proc(5)).
func rssBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// slowWriter takes what it is given, pausing after every step bytes: a
// client that reads slower than the program writes.
type slowWriter struct {
	n, next, step int64
	pause         time.Duration
}

func (w *slowWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	if w.n >= w.next {
		time.Sleep(w.pause)
		w.next = w.n + w.step
	}
	return len(p), nil
}

// TestA1GiBStreamToASlowClientGrowsTheDaemonByLessThan32MiB is the
// issue's bound on the relay: a program writes 1 GiB of output as fast as
// it can, the client reads it slowly, and the process that holds the
// control server, the sessions and the guest's stand-in (and the client)
// grows by less than 32 MiB, since each hop holds only what the credit
// allows. A relay that buffered what the client had not read would grow
// by most of the gibibyte.
func TestA1GiBStreamToASlowClientGrowsTheDaemonByLessThan32MiB(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	r := newRig(t, &execs.Sessions{})
	runtime.GC()
	debug.FreeOSMemory()
	base := rssBytes(t)
	var peak atomic.Int64
	peak.Store(base)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if v := rssBytes(t); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	conn, err := r.client.Exec(ctx, "web", control.ExecRequest{Argv: []string{"head", "-c", "1073741824", "/dev/zero"}})
	if err != nil {
		t.Fatal(err)
	}
	out := &slowWriter{step: 256 << 10, pause: time.Millisecond}
	start := time.Now()
	exit, err := control.RunExec(ctx, conn, control.ExecIO{Stdout: out})
	close(done)
	<-sampled
	if err != nil || exit.Code != 0 {
		t.Fatalf("the stream ended %+v, %v", exit, err)
	}
	if out.n != 1<<30 {
		t.Fatalf("the client read %d bytes, want 1 GiB", out.n)
	}
	grew := peak.Load() - base
	t.Logf("1 GiB in %v; the process grew by %.1f MiB at most (from %.1f MiB)", time.Since(start).Round(time.Millisecond), float64(grew)/(1<<20), float64(base)/(1<<20))
	if grew >= 32<<20 {
		t.Fatalf("the process grew by %.1f MiB streaming to a slow client; want less than 32 MiB", float64(grew)/(1<<20))
	}
}
