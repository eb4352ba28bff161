package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/watch"
)

// bootFails is the fake VMM whose starts fail while fail is set; it notes
// when each failed start was asked.
type bootFails struct {
	*fake.VMM
	fail   atomic.Bool
	mu     sync.Mutex
	failed []time.Time
}

func (f *bootFails) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if f.fail.Load() {
		f.mu.Lock()
		f.failed = append(f.failed, time.Now())
		f.mu.Unlock()
		return vmm.Status{}, errors.New("boom")
	}
	return f.VMM.Start(ctx, spec)
}

func (f *bootFails) attempts() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.failed...)
}

// failingBoots runs a daemon on a fake VMM whose starts fail on demand.
func (h *host) failingBoots(t *testing.T, failing bool) (*Daemon, *bootFails, *fake.VMM, func()) {
	t.Helper()
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	w := &bootFails{VMM: v}
	w.fail.Store(failing)
	deps.VMM = w
	d, stop := h.run(t, deps)
	return d, w, v, stop
}

// threeRestarts is a policy of three restarts, 500 ms, then 1 s apart.
var threeRestarts = desired.RestartPolicy{MaxRestarts: 3, InitialBackoffMs: 500, MaxBackoffMs: 1000, BackoffFactor: 2, ResetAfterMs: 600000}

// waitingForARestart: a failed, its boot's failure said, and when it is
// restarted (a pass slower than the backoff may miss one restart's wait,
// never all of them).
func waitingForARestart(r *reported.HostReportedState) bool {
	a := instance(r, "a")
	return a != nil && a.State == reported.InstanceFailed &&
		strings.HasPrefix(a.Message, "the microVM could not be started: boom; restart ") && strings.Contains(a.Message, " of 3 in ")
}

// checkSpacing fails unless the failed starts at are n, each after the
// backoff that precedes it (delays[i] before attempt i+1).
func checkSpacing(t *testing.T, at []time.Time, n int, delays ...time.Duration) {
	t.Helper()
	if len(at) != n {
		t.Fatalf("%d failed start attempts, want %d (the first, then one per restart)", len(at), n)
	}
	for i, d := range delays {
		if gap := at[i+1].Sub(at[i]); gap < d {
			t.Fatalf("attempt %d came %v after the one before; its backoff is %v", i+2, gap, d)
		}
	}
}

func outOfRestarts(r *reported.HostReportedState) bool {
	a := instance(r, "a")
	return a != nil && a.State == reported.InstanceFailed && strings.HasPrefix(a.Message, "out of restarts")
}

// afterPasses waits for n passes of d to end.
func afterPasses(d *Daemon, n int) {
	for range n {
		<-d.afterPass()
	}
}

func TestAGuestWhoseRestartsCannotBootBacksOffBetweenThemAndIsGivenUp(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	d, w, v, _ := h.failingBoots(t, false)
	a := h.app("a", "a1")
	a.Config.RestartPolicy = threeRestarts
	h.write(t, doc(a))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	w.fail.Store(true)
	if err := v.Crash("a", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a failed, a restart waiting", waitingForARestart)
	r := h.waitFor(t, "a out of restarts", outOfRestarts)
	if got := instance(r, "a"); got.RestartCount != 3 || !strings.Contains(got.Message, "restarted 3 times") || !strings.Contains(got.Message, "boom") {
		t.Fatalf("out of restarts: restartCount %d, message %q; want 3 restarts and the boot's failure", got.RestartCount, got.Message)
	}
	// Each restart waits its backoff from the failed boot before it, even
	// once the delay reaches its cap; none follows the last.
	afterPasses(d, 5)
	checkSpacing(t, w.attempts(), 3, time.Second, time.Second)
}

func TestAFirstStartThatFailsIsRetriedAfterTheBackoffAcrossADaemonRestartThenGivenUp(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	d, w, _, stop := h.failingBoots(t, true)
	a := h.app("a", "a1")
	a.Config.RestartPolicy = threeRestarts
	h.write(t, doc(a))
	h.waitFor(t, "a failed, a restart waiting", waitingForARestart)
	// The daemon goes and comes back once the next pass has recorded the
	// failure (one gone before would not know of the attempt, and start
	// once more): what it recorded holds, and no attempt counts twice.
	afterPasses(d, 1)
	stop()
	first := w.attempts()
	d, w, _, _ = h.failingBoots(t, true)
	h.waitFor(t, "a out of restarts", outOfRestarts)
	afterPasses(d, 5)
	at := append(first, w.attempts()...)
	checkSpacing(t, at, 4, 500*time.Millisecond, time.Second, time.Second)
}

// listFailsOnce is the fake VMM whose next listing fails once fail is set.
type listFailsOnce struct {
	*fake.VMM
	fail atomic.Bool
}

func (v *listFailsOnce) List(ctx context.Context) ([]vmm.Status, error) {
	if v.fail.CompareAndSwap(true, false) {
		return nil, errors.New("the runtime folder could not be read")
	}
	return v.VMM.List(ctx)
}

func TestAWakeWaitingForAFirstBootOutlastsAPassWhoseListingFailed(t *testing.T) {
	h := newHost(t)
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	w := &listFailsOnce{VMM: v}
	deps.VMM = w
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := Open(ctx, h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(doc(h.app("a", "a1", withState(desired.StateOnRequest))))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Offer(ctx, watch.Document{Data: b}); err != nil {
		t.Fatal(err)
	}
	// No pass has run: a has no slot, and its wake waits for the next pass.
	select {
	case <-d.kick:
	default:
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	woke := make(chan error, 1)
	go func() { woke <- d.Wake(wctx, "a") }()
	<-d.kick // the wake asked for a pass
	d.mu.Lock()
	waiting := d.apps.byID["a"] != nil && d.apps.byID["a"].wantAwake && !d.apps.byID["a"].hasSlot
	d.mu.Unlock()
	if !waiting {
		t.Fatal("the wake is not waiting for a's first boot")
	}
	w.fail.Store(true)
	if err := d.Pass(ctx); err == nil {
		t.Fatal("the pass whose listing failed did not say so")
	}
	// The wake sees that pass end: it answers, or asks for another pass.
	select {
	case err := <-woke:
		t.Fatalf("the wake answered %v after a pass that failed before it planned; it should wait for the next pass and boot a", err)
	case <-d.kick:
	}
	// The passes go on; the next one gives a a slot and boots it.
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		cancel()
		<-done
		d.Close()
	}()
	if err := <-woke; err != nil {
		t.Fatalf("the wake answered %v after a pass that failed before it planned; it should wait for the next pass and boot a", err)
	}
}
