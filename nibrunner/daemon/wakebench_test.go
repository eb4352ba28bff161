package daemon

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/proxy"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/watch"
)

// slowStarts is the fake VMM with a fixed start latency, as a microVM's
// boot has: every start and wake takes delay before the guest runs.
type slowStarts struct {
	*fake.VMM
	delay time.Duration
}

func (v slowStarts) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if err := sleepCtx(ctx, v.delay); err != nil {
		return vmm.Status{}, err
	}
	return v.VMM.Start(ctx, spec)
}

func (v slowStarts) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if err := sleepCtx(ctx, v.delay); err != nil {
		return vmm.Status{}, err
	}
	return v.VMM.Wake(ctx, spec)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BenchmarkWakeDuringABusyPass starts 300 running apps on the fake VMM
// with a 2 s start latency, max_concurrent_vm_starts at a time, and while
// they start wakes a sleeping on-request app through the HTTP proxy. It
// reports how long that request waited (wake-ms; the bound is 3× the start
// latency) and how long the 300 took to run (converge-s; the bound is 1.5×
// 300 × 2 s ÷ max_concurrent_vm_starts).
func BenchmarkWakeDuringABusyPass(b *testing.B) {
	const (
		n       = 300
		latency = 2 * time.Second
		starts  = 30 // max_concurrent_vm_starts
	)
	var wakeTotal, convergeTotal time.Duration
	for i := 0; i < b.N; i++ {
		wake, converge := wakeDuringABusyPass(b, n, latency, starts)
		wakeTotal += wake
		convergeTotal += converge
	}
	wake := wakeTotal / time.Duration(b.N)
	converge := convergeTotal / time.Duration(b.N)
	b.ReportMetric(float64(wake.Milliseconds()), "wake-ms")
	b.ReportMetric(converge.Seconds(), "converge-s")
	if wake >= 3*latency {
		b.Errorf("the wake took %v, over 3× the start latency (%v)", wake, 3*latency)
	}
	if ideal := time.Duration(n) * latency / starts; converge > ideal*3/2 {
		b.Errorf("300 apps ran after %v, over 1.5× %v", converge, ideal)
	}
}

func wakeDuringABusyPass(b *testing.B, n int, latency time.Duration, starts int) (wake, converge time.Duration) {
	b.Helper()
	h := newHost(b)
	deps, fv, err := h.deps(true)
	if err != nil {
		b.Fatal(err)
	}
	deps.VMM = slowStarts{VMM: fv, delay: latency}
	px := proxy.New(proxy.Options{})
	defer px.Close()
	deps.Router, deps.Traffic = px, px
	cfg := h.config()
	cfg.MaxApps, cfg.CapacityMiB, cfg.MaxConcurrentVMStarts = n+1, uint64(16*(n+1)), starts
	cfg.Resync = time.Second
	d, err := Open(context.Background(), cfg, deps)
	if err != nil {
		b.Fatal(err)
	}
	h.watch(d)
	px.SetWaker(d)
	front := httptest.NewServer(px)
	defer front.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done; d.Close() }()

	// The on-request app boots once, then sleeps.
	waker := h.app("waker", "w1", withState(desired.StateOnRequest), withMemory(16))
	h.write(b, doc(waker))
	h.waitFor(b, "the on-request app's first boot", allIn(reported.InstanceRunning, "waker"))
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := d.Sleep(sctx, "waker"); err != nil {
		b.Fatal(err)
	}
	h.waitFor(b, "the on-request app asleep", allIn(reported.InstanceIdle, "waker"))

	apps := []desired.DesiredInstance{waker}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("app-%03d", i)
		in := h.app(names[i], "d1", withMemory(16))
		in.Config.HealthCheck.IntervalMs = 1000
		apps = append(apps, in)
	}
	raw := []byte(mustJSONB(b, doc(apps...)))
	b.ResetTimer()
	began := time.Now()
	if err := d.Offer(ctx, watch.Document{Data: raw}); err != nil {
		b.Fatal(err)
	}
	d.Kick()
	// Once the starts are under way (the gate is full), the request.
	h.deadlineWait(b, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		busy := 0
		for _, a := range d.apps.byID {
			if a.busy {
				busy++
			}
		}
		return busy > starts
	})
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/", nil)
	req.Host = "waker.apps.example.net"
	sent := time.Now()
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	wake = time.Since(sent)
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("the wake answered %d", resp.StatusCode)
	}
	h.waitFor(b, "the 300 running", allIn(reported.InstanceRunning, names...))
	converge = time.Since(began)
	b.StopTimer()
	return wake, converge
}
