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
	"alpnib.dev/nibrunner/vmm"
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
	var rss, ramRSS, guestUsed, state uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := lifecycle(b, v, spec, func(st vmm.Status) {
			time.Sleep(2 * time.Second) // let the guest idle
			r, err := rssBytes(st.PID)
			if err != nil {
				b.Fatal(err)
			}
			rss += r
			smaps, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", st.PID))
			if err != nil {
				b.Fatal(err)
			}
			ram, err := guestRAMResident(smaps, uint64(spec.MemoryMiB)<<20)
			if err != nil {
				b.Fatal(err)
			}
			ramRSS += ram
			if m, err := v.Measure(ctx, spec.AppID); err == nil {
				guestUsed += m.MemoryUsedBytes
			}
		}, func() {
			if stamp, err := readStamp(v.snapDir(spec.AppID)); err == nil {
				state += uint64(stamp.StateSize)
			}
		})
		cold, sleep, wake = cold+p.cold, sleep+p.sleep, wake+p.wake

		t0 := time.Now()
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
	b.ReportMetric(float64(ramRSS)/n/(1<<20), "guest-touched-MiB")
	b.ReportMetric(float64(rss-ramRSS)/n/(1<<20), "qemu-beyond-guest-MiB")
	b.ReportMetric(float64(guestUsed)/n/(1<<20), "guest-used-MiB")
	b.ReportMetric(float64(state)/n/(1<<20), "state-MiB")
	b.ReportMetric(cold.Seconds()/wake.Seconds(), "cold/wake")
	b.Logf("accelerator %s, guest memory %d MiB", v.Version(), spec.MemoryMiB)
}

// phases are the times of one guest's cold boot (Start until the tenant
// answers), sleep and wake (until it answers again).
type phases struct{ cold, sleep, wake time.Duration }

// lifecycle boots spec cold, sleeps it and wakes it from its snapshot,
// leaving it running; idle runs once it answers, slept once it sleeps.
func lifecycle(b *testing.B, v *VMM, spec vmm.Spec, idle func(vmm.Status), slept func()) phases {
	b.Helper()
	ctx := context.Background()
	var p phases
	t0 := time.Now()
	st, err := v.Start(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	get(b, st.Endpoint, "/count", 2*time.Minute)
	p.cold = time.Since(t0)
	if idle != nil {
		idle(st)
	}
	t0 = time.Now()
	if err := v.Sleep(ctx, spec.AppID); err != nil {
		b.Fatal(err)
	}
	p.sleep = time.Since(t0)
	if slept != nil {
		slept()
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
	p.wake = time.Since(t0)
	return p
}

// guestRAMResident reads, from a QEMU process's /proc/<pid>/smaps, how
// much of the guest's RAM is resident: the pages the guest has touched.
// The RAM is the one anonymous mapping of the guest's memory size (QEMU
// may round it up to a huge-page boundary, hence the slack); what QEMU
// holds beyond it is the per-guest cost of QEMU itself.
func guestRAMResident(smaps []byte, memBytes uint64) (uint64, error) {
	ms, err := parseSmaps(smaps)
	if err != nil {
		return 0, err
	}
	var best uint64
	found := false
	for _, m := range ms {
		if m.isGuestRAM(memBytes) {
			best, found = max(best, m.kB["Rss"]<<10), true
		}
	}
	if !found {
		return 0, fmt.Errorf("no anonymous mapping of %d MiB (the guest RAM) in smaps", memBytes>>20)
	}
	return best, nil
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
