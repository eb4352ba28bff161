package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/watch"
)

// BenchmarkANoOpPassOver1000Instances measures one pass of a converged
// host running 1,000 instances on the fake VMM: what the daemon spends
// every resync tick when nothing changes. Guests are served in-process
// (1,000 guest processes would need several GiB on a shared machine), so
// the reported RSS includes their listeners and is an upper bound.
func BenchmarkANoOpPassOver1000Instances(b *testing.B) {
	const n = 1000
	h := newHost(b)
	deps, _, err := h.deps(true)
	if err != nil {
		b.Fatal(err)
	}
	cfg := h.config()
	cfg.MaxApps = n
	cfg.CapacityMiB = 64 * n
	d, err := Open(context.Background(), cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	apps := make([]desired.DesiredInstance, n)
	for i := range apps {
		apps[i] = h.app(fmt.Sprintf("app-%04d", i), "d1", withMemory(16))
		apps[i].Config.HealthCheck.IntervalMs = 10000
	}
	doc := doc(apps...)
	raw := []byte(mustJSONB(b, doc))
	ctx := context.Background()
	if err := d.Offer(ctx, watch.Document{Data: raw}); err != nil {
		b.Fatal(err)
	}
	// No Run loop drains the daemon's kicks here: each is a worker's commit
	// or a probe's change, after which the next pass may see more running.
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	for {
		if err := d.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		r := h.readReport(b)
		running := 0
		for _, in := range r.Instances {
			if in.State == reported.InstanceRunning {
				running++
			}
		}
		if running == n {
			break
		}
		select {
		case <-d.kick:
		case <-deadline.C:
			b.Fatalf("only %d of %d running after 2 minutes", running, n)
		}
	}
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.Pass(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / time.Duration(b.N)
	b.ReportMetric(float64(cpu.Microseconds())/1000, "cpu-ms/pass")
	b.ReportMetric(float64(rssKiB())/1024, "rss-MiB")
}

func mustJSONB(tb testing.TB, d *desired.HostDesiredState) string {
	tb.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func rssKiB() int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
