package qemu

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm"
)

// densityGuest is one guest of the density benchmark, once it idles.
type densityGuest struct {
	app   string
	mem   int
	share hostShare
	used  uint64 // what the guest counts as used: MemTotal - MemAvailable
	// reserved is what the guest kernel keeps out of MemTotal (its own
	// image, the page structs): memory the guest uses that guest-used
	// does not count.
	reserved uint64
	boot     time.Duration
}

// bootIdle boots one guest per size in mems, at most par at a time, waits
// until each answers, lets them all idle for idle, and reads what each
// holds. The guests are stopped when b ends.
func bootIdle(b *testing.B, mems []int, par int, idle time.Duration) []densityGuest {
	_, gs := bootIdleVMM(b, mems, par, idle)
	return gs
}

func bootIdleVMM(b *testing.B, mems []int, par int, idle time.Duration) (*VMM, []densityGuest) {
	f := newFixture(b)
	v := newVMM(b, f.dir, nil)
	mke2fs := testenv.RequireCommand(b, "mke2fs")
	ctx := context.Background()
	out := make([]densityGuest, len(mems))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed error
	ports := map[int]bool{}
	for i, mem := range mems {
		spec := f.spec(b, fmt.Sprintf("d%02d", i))
		spec.MemoryMiB, spec.VCPUs, spec.Slot = mem, 1, 10+i
		// Each guest its own volume: they run at once.
		vol := fmt.Sprintf("%s/vol%02d.ext4", f.dir, i)
		if out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", vol, "64M").CombinedOutput(); err != nil {
			b.Fatalf("make a volume: %v\n%s", err, out)
		}
		spec.VolumePath = vol
		for ports[spec.Network.HostPort] {
			spec.Network = vmm.Network{HostPort: slot.HostPort(slottest.Free(b))}
		}
		ports[spec.Network.HostPort] = true
		b.Cleanup(func() { _ = v.Stop(context.Background(), spec.AppID) })
		wg.Add(1)
		go func(i int, spec vmm.Spec) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			st, err := v.Start(ctx, spec)
			if err == nil {
				err = answer(st.Endpoint, 5*time.Minute)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && failed == nil {
				failed = fmt.Errorf("guest %s: %w", spec.AppID, err)
			}
			out[i] = densityGuest{app: spec.AppID, mem: spec.MemoryMiB, boot: time.Since(t0)}
		}(i, spec)
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	time.Sleep(idle) // the idling is what is measured
	return v, measureIdle(b, v, out)
}

// measureIdle reads what each guest in gs holds now.
func measureIdle(b *testing.B, v *VMM, gs []densityGuest) []densityGuest {
	ctx := context.Background()
	out := append([]densityGuest(nil), gs...)
	sts, err := v.List(ctx)
	if err != nil {
		b.Fatal(err)
	}
	pids := map[string]int{}
	for _, st := range sts {
		pids[st.AppID] = st.PID
	}
	for i := range out {
		g := &out[i]
		if g.share, err = readHostShare(pids[g.app], uint64(g.mem)<<20); err != nil {
			b.Fatal(err)
		}
		m, err := v.Measure(ctx, g.app)
		if err != nil {
			b.Fatal(err)
		}
		g.used = m.MemoryUsedBytes
		g.reserved = uint64(g.mem)<<20 - min(m.MemoryTotalBytes, uint64(g.mem)<<20)
	}
	return out
}

// answer waits until the guest's tenant answers /count.
func answer(endpoint string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		if err := probe(endpoint); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// probe asks the tenant once.
func probe(endpoint string) error {
	c := http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get("http://" + endpoint + "/count")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /count: %s", resp.Status)
	}
	return nil
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// BenchmarkDensity boots NIB_DENSITY_GUESTS (default 20) idle 256 MiB
// guests, four booting at a time, lets them idle 30 s, and reports per
// guest its QEMU's PSS (and of it the TCG cache, apart), what the guest
// counts as used, and the bound host ≤ guest-used + 40 MiB without the TCG
// cache. Run it once with bench/density.sh, which runs it beside the
// commit before the balloon.
func BenchmarkDensity(b *testing.B) {
	testenv.RequireRoot(b)
	n := 20
	if s := os.Getenv("NIB_DENSITY_GUESTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("NIB_DENSITY_GUESTS=%q: want a count of guests", s)
		}
	}
	mems := make([]int, n)
	for i := range mems {
		mems[i] = 256
	}
	for i := 0; i < b.N; i++ {
		v, gs := bootIdleVMM(b, mems, 4, 30*time.Second)
		var pss, tcg, used, ram, reserved uint64
		over := 0
		for _, g := range gs {
			host := g.share.PSS - g.share.TCG
			b.Logf("%s: host %.1f MiB (guest RAM %.1f, QEMU's own %.1f), guest-used %.1f MiB (kernel's reserved memory beside it %.1f), boot %.1f s",
				g.app, mib(host), mib(g.share.GuestRAM), mib(host-g.share.GuestRAM), mib(g.used), mib(g.reserved), g.boot.Seconds())
			b.Logf("%s: TCG cache %.1f MiB", g.app, mib(g.share.TCG))
			if host > g.used+40<<20 {
				over++
			}
			pss, tcg, used, ram, reserved = pss+g.share.PSS, tcg+g.share.TCG, used+g.used, ram+g.share.GuestRAM, reserved+g.reserved
		}
		k := float64(len(gs))
		b.ReportMetric(mib(pss-tcg)/k, "host-MiB/guest")
		b.ReportMetric(mib(ram)/k, "guest-RAM-MiB/guest")
		b.ReportMetric(mib(pss-tcg-ram)/k, "qemu-own-MiB/guest")
		b.ReportMetric(mib(used)/k, "guest-used-MiB/guest")
		b.ReportMetric(mib(reserved)/k, "kernel-reserved-MiB/guest")
		b.ReportMetric(mib(pss-tcg)/k-mib(used)/k-40, "over-bound-MiB/guest")
		b.ReportMetric(mib(tcg)/k, "tcg-cache-MiB/guest")
		b.ReportMetric(float64(over), "guests-over-bound")
		if os.Getenv("NIB_DENSITY_KSM") == "1" {
			ksmShare(b, v, gs)
		}
	}
}

// ksmShare measures what KSM would share among the idle guests: QEMU
// marks guest RAM mergeable (mem-merge, on by default), so turning the
// host's ksmd on merges identical pages across them. The host's KSM
// settings are put back as they were (run=2 first: pages merged during
// the measurement are unmerged again). Host-wide, so opt-in.
func ksmShare(b *testing.B, v *VMM, gs []densityGuest) {
	const dir = "/sys/kernel/mm/ksm/"
	read := func(name string) string {
		x, err := os.ReadFile(dir + name)
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(string(x))
	}
	write := func(name, val string) {
		if err := os.WriteFile(dir+name, []byte(val), 0o644); err != nil {
			b.Fatalf("KSM %s=%s: %v", name, val, err)
		}
	}
	run, pages, sleep := read("run"), read("pages_to_scan"), read("sleep_millisecs")
	defer func() {
		write("run", "2")
		write("run", run)
		write("pages_to_scan", pages)
		write("sleep_millisecs", sleep)
	}()
	write("pages_to_scan", "4000")
	write("sleep_millisecs", "20")
	write("run", "1")
	// Merged when two full scans have passed with every guest scanned.
	start, _ := strconv.Atoi(read("full_scans"))
	t0 := time.Now()
	for {
		n, _ := strconv.Atoi(read("full_scans"))
		if n >= start+2 || time.Since(t0) > 5*time.Minute {
			break
		}
		time.Sleep(time.Second)
	}
	after := measureIdle(b, v, gs)
	var before, with uint64
	for i := range gs {
		before += gs[i].share.PSS - gs[i].share.TCG
		with += after[i].share.PSS - after[i].share.TCG
	}
	k := float64(len(gs))
	b.Logf("KSM after %s: pages_sharing %s, pages_shared %s; host per guest %.1f MiB without, %.1f MiB with", time.Since(t0).Round(time.Second), read("pages_sharing"), read("pages_shared"), mib(before)/k, mib(with)/k)
	b.ReportMetric(mib(with)/k, "host-with-KSM-MiB/guest")
}

// BenchmarkIdleSizes boots an idle 128 MiB and an idle 1024 MiB guest
// running the same app side by side and reports what each holds (PSS
// without the TCG cache) and the difference.
func BenchmarkIdleSizes(b *testing.B) {
	testenv.RequireRoot(b)
	for i := 0; i < b.N; i++ {
		gs := bootIdle(b, []int{128, 1024}, 2, 30*time.Second)
		sort.Slice(gs, func(i, j int) bool { return gs[i].mem < gs[j].mem })
		h := func(g densityGuest) float64 { return mib(g.share.PSS - g.share.TCG) }
		for _, g := range gs {
			b.Logf("%d MiB guest: host %.1f MiB (guest RAM %.1f, TCG cache %.1f), guest-used %.1f MiB", g.mem, h(g), mib(g.share.GuestRAM), mib(g.share.TCG), mib(g.used))
		}
		b.ReportMetric(h(gs[0]), "host-128-MiB")
		b.ReportMetric(h(gs[1]), "host-1024-MiB")
		b.ReportMetric(h(gs[1])-h(gs[0]), "1024-minus-128-MiB")
	}
}
