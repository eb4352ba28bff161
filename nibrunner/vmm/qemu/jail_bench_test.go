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

// BenchmarkJailCost boots, sleeps and wakes one app with and without the
// jail, alternating in one run (the peer is the launch of the builds
// before it: QEMU exec'd as root, no sandbox, namespaces or cgroup), and
// reports each phase's ratio. The jail must add at most 10% to a wake.
// Run: scripts/netguard.sh go test -run '^$' -bench BenchmarkJailCost
// -benchtime 4x ./nibrunner/vmm/qemu (each iteration is one of each).
func BenchmarkJailCost(b *testing.B) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.spec(b, "bench")
	b.Cleanup(func() { _ = v.Stop(context.Background(), spec.AppID) })
	var with, without phases
	var rss, ram uint64
	once := func(p *phases, jailed bool) {
		v.unjailed = !jailed
		q := lifecycle(b, v, spec, func(st vmm.Status) {
			if jailed {
				r, _ := rssBytes(st.PID)
				smaps, _ := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", st.PID))
				g, _ := guestRAMResident(smaps, uint64(spec.MemoryMiB)<<20)
				rss, ram = rss+r, ram+g
			}
		}, nil)
		p.cold, p.sleep, p.wake = p.cold+q.cold, p.sleep+q.sleep, p.wake+q.wake
		if err := v.Stop(ctx, spec.AppID); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Alternating which goes first spreads a warming cache evenly.
		if i%2 == 0 {
			once(&without, false)
			once(&with, true)
		} else {
			once(&with, true)
			once(&without, false)
		}
	}
	n := float64(b.N)
	for _, m := range []struct {
		name string
		w, o time.Duration
	}{{"cold", with.cold, without.cold}, {"sleep", with.sleep, without.sleep}, {"wake", with.wake, without.wake}} {
		b.ReportMetric(m.w.Seconds()/n, m.name+"-jailed-s")
		b.ReportMetric(m.o.Seconds()/n, m.name+"-unjailed-s")
		b.ReportMetric(m.w.Seconds()/m.o.Seconds(), m.name+"-jailed/unjailed")
	}
	b.ReportMetric(float64(rss-ram)/n/(1<<20), "qemu-beyond-guest-MiB")
	b.Logf("accelerator %s, guest memory %d MiB", v.Version(), spec.MemoryMiB)
}

// BenchmarkSpinningGuestCPU runs a guest whose vCPU never idles (the
// tenant spins) and reports the CPUs its QEMU used over wall time, jailed
// (capped at its one vCPU by its cgroup) and not.
func BenchmarkSpinningGuestCPU(b *testing.B) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.spec(b, "spin")
	spec.Command.Environment = map[string]string{"SPIN": "1"}
	b.Cleanup(func() { _ = v.Stop(context.Background(), spec.AppID) })
	var with, without float64
	measure := func(jailed bool) float64 {
		v.unjailed = !jailed
		st, err := v.Start(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		get(b, st.Endpoint, "/count", 2*time.Minute)
		c0, t0 := cpuTicks(b, st.PID), time.Now()
		time.Sleep(5 * time.Second)
		used := float64(cpuTicks(b, st.PID)-c0) / 100 / time.Since(t0).Seconds()
		if err := v.Stop(ctx, spec.AppID); err != nil {
			b.Fatal(err)
		}
		return used
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		without += measure(false)
		with += measure(true)
	}
	b.ReportMetric(with/float64(b.N), "cpus-jailed")
	b.ReportMetric(without/float64(b.N), "cpus-unjailed")
}

// cpuTicks is a process's user and system time in clock ticks (100 a
// second on Linux).
func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return u + k
}
