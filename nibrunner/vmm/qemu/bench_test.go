package qemu

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// BenchmarkGuestLifecycle measures, per iteration, one app's cold boot
// (Start until the tenant answers HTTP), its sleep (pause + state to a
// file + end QEMU), its wake (restore until the tenant answers again) and
// QEMU's resident memory while the guest idles. Run it with
// bench/vmm.sh, which sets a small -benchtime: every iteration boots.
func BenchmarkGuestLifecycle(b *testing.B) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.spec(b, "bench")
	// A failed iteration must not leave its guest running.
	b.Cleanup(func() { _ = v.Stop(context.Background(), spec.AppID) })
	var cold, sleep, wake, stop time.Duration
	var rss, guestUsed, state uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		st, err := v.Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		get(b, st.Endpoint, "/count", 2*time.Minute)
		cold += time.Since(t0)

		time.Sleep(2 * time.Second) // let the guest idle
		r, err := rssBytes(st.PID)
		if err != nil {
			b.Fatal(err)
		}
		rss += r
		if m, err := v.Measure(ctx, spec.AppID); err == nil {
			guestUsed += m.MemoryUsedBytes
		}

		t0 = time.Now()
		if err := v.Sleep(ctx, spec.AppID); err != nil {
			b.Fatal(err)
		}
		sleep += time.Since(t0)
		if stamp, err := readStamp(v.snapDir(spec.AppID)); err == nil {
			state += uint64(stamp.StateSize)
		}

		t0 = time.Now()
		st, err = v.Wake(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if !st.Restored {
			b.Fatal("wake booted cold")
		}
		get(b, st.Endpoint, "/count", time.Minute)
		wake += time.Since(t0)

		t0 = time.Now()
		if err := v.Stop(ctx, spec.AppID); err != nil {
			b.Fatal(err)
		}
		stop += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(cold.Seconds()/n, "cold-boot-s")
	b.ReportMetric(sleep.Seconds()/n, "sleep-s")
	b.ReportMetric(wake.Seconds()/n, "wake-s")
	b.ReportMetric(stop.Seconds()/n, "stop-s")
	b.ReportMetric(float64(rss)/n/(1<<20), "qemu-rss-MiB")
	b.ReportMetric(float64(guestUsed)/n/(1<<20), "guest-used-MiB")
	b.ReportMetric(float64(state)/n/(1<<20), "state-MiB")
	b.ReportMetric(cold.Seconds()/wake.Seconds(), "cold/wake")
	b.Logf("accelerator %s, guest memory %d MiB", v.Version(), spec.MemoryMiB)
}

// rssBytes reads a process's resident set size.
func rssBytes(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
