package daemon

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/volume"
)

func TestAWakeOfAnAppThatNeverHadASlotSaysWhyItsStartIsHeldBackRatherThanHang(t *testing.T) {
	h := newHost(t)
	h.maxApps = 1
	d, _, _ := h.start(t)
	b := h.app("b", "b1")
	h.write(t, doc(b))
	h.waitFor(t, "b running", allIn(reported.InstanceRunning, "b"))
	// a arrives when b holds the only slot: the passes hold its first boot
	// back, and it never gets a slot.
	h.write(t, doc(b, h.app("a", "a1", withState(desired.StateOnRequest))))
	const full = "waiting to be started: every slot of this host is taken (max_apps = 1)"
	h.waitFor(t, "a waiting for a slot", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a != nil && a.State == reported.InstancePending && a.Message == full
	})
	// Two requests at once share the wake, and both are told.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- d.Wake(ctx, "a") }()
	}
	for range 2 {
		err := <-errs
		if err == nil || ctx.Err() != nil {
			t.Fatalf("the wake of an app a pass holds back answered %v after its context ended (%v); it should say why it waits", err, ctx.Err())
		}
		if want := "wake a: " + full; err.Error() != want {
			t.Fatalf("the wake said %q, want %q", err, want)
		}
	}
}

// wakeFails is the fake VMM whose wakes fail while failWakes is set (the
// restore refused, and no cold boot to fall back on) and whose starts fail
// while its bootFails says so. It notes when each wake was asked and rings
// woke at each.
type wakeFails struct {
	*bootFails
	failWakes atomic.Bool
	// hangWakes: a wake waits for its context to end (a daemon closing
	// while QEMU loads the state) and fails with it.
	hangWakes atomic.Bool
	mu        sync.Mutex
	wakes     []time.Time
	woke      chan struct{}
}

func (f *wakeFails) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	f.mu.Lock()
	f.wakes = append(f.wakes, time.Now())
	f.mu.Unlock()
	select {
	case f.woke <- struct{}{}:
	default:
	}
	switch {
	case f.hangWakes.Load():
		<-ctx.Done()
		return vmm.Status{}, ctx.Err()
	case f.failWakes.Load():
		return vmm.Status{}, errors.New("QEMU refused the incoming migration")
	}
	return f.VMM.Wake(ctx, spec)
}

func (f *wakeFails) wakeAttempts() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.wakes...)
}

// failingWakes runs a daemon on a fake VMM whose wakes and starts fail on
// demand.
func (h *host) failingWakes(t *testing.T) (*Daemon, *wakeFails) {
	t.Helper()
	deps, w := h.wakeDeps(t)
	d, _ := h.run(t, deps)
	return d, w
}

// wakeDeps are the host's deps on a fake VMM whose wakes and starts fail
// on demand.
func (h *host) wakeDeps(t *testing.T) (Deps, *wakeFails) {
	t.Helper()
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	w := &wakeFails{bootFails: &bootFails{VMM: v}, woke: make(chan struct{}, 1)}
	deps.VMM = w
	return deps, w
}

// asleep boots on-request app in, puts it to sleep and waits until the
// report says it is idle with a snapshot kept.
func (h *host) asleep(t *testing.T, d *Daemon, in desired.DesiredInstance) {
	t.Helper()
	h.write(t, doc(in))
	h.waitFor(t, string(in.AppId)+"'s first boot", allIn(reported.InstanceRunning, string(in.AppId)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Sleep(ctx, string(in.AppId)); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, string(in.AppId)+" asleep", allIn(reported.InstanceIdle, string(in.AppId)))
	if _, err := os.Stat(h.snapshot(string(in.AppId))); err != nil {
		t.Fatalf("no snapshot of %s after its sleep: %v", in.AppId, err)
	}
}

// snapshot is the fake VMM's snapshot stamp of app.
func (h *host) snapshot(app string) string { return filepath.Join(h.dir, "snap", app, "stamp.json") }

func TestAFailedWakeOfASleepingAppIsRetriedAsARestartAfterItsBackoffWithinTheBudgetThenGivenUp(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	d, w := h.failingWakes(t)
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	a.Config.RestartPolicy = threeRestarts
	h.asleep(t, d, a)

	// Its restore is refused and no boot succeeds; the document now asks
	// it running, so every pass wants it up.
	w.failWakes.Store(true)
	w.fail.Store(true)
	a.DesiredState = desired.StateRunning
	h.write(t, doc(a))
	<-w.woke
	afterPasses(d, 3)
	if n := len(w.wakeAttempts()); n != 1 {
		t.Fatalf("a failed wake was tried %d times within 3 passes; it should wait for its restart's backoff", n)
	}
	h.waitFor(t, "a failed, its snapshot dropped, a restart waiting", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a != nil && a.State == reported.InstanceFailed &&
			strings.HasPrefix(a.Message, "the microVM could not be woken: QEMU refused the incoming migration; its memory snapshot was dropped and it is booted again from its volume; restart 1 of 3 in ")
	})
	if _, err := os.Stat(h.snapshot("a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the snapshot whose restore failed is still kept (%v); the restart boots cold", err)
	}

	r := h.waitFor(t, "a out of restarts", outOfRestarts)
	if got := instance(r, "a"); got.RestartCount != 3 || !strings.Contains(got.Message, "restarted 3 times") || !strings.Contains(got.Message, "boom") {
		t.Fatalf("out of restarts: restartCount %d, message %q; want 3 restarts and the last boot's failure", got.RestartCount, got.Message)
	}
	// The wake, then one restart per budget unit, each after its backoff
	// from the attempt before; none follows the last.
	afterPasses(d, 5)
	if n := len(w.wakeAttempts()); n != 1 {
		t.Fatalf("%d wakes, want 1: the retries of a failed wake are restarts", n)
	}
	checkSpacing(t, append(w.wakeAttempts(), w.attempts()...), 4, 500*time.Millisecond, time.Second, time.Second)
}

func TestAWakeOfASleepingAppWhoseSnapshotCannotBeRestoredBootsColdOnItsVolumeAndSaysTheSnapshotWasDropped(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	h.asleep(t, d, a)
	vol := filepath.Join(h.dir, "volumes", "a-data.img")
	f, err := os.OpenFile(vol, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("what the tenant wrote before it slept"), 4096); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(vol)
	if err != nil {
		t.Fatal(err)
	}
	// The snapshot cannot be read back.
	if err := os.WriteFile(h.snapshot("a"), []byte("not a stamp"), 0o640); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatalf("a wake whose snapshot cannot be restored failed (%v); it should boot cold", err)
	}
	r := h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	const dropped = "woken by a cold boot: its memory snapshot could not be restored and was dropped, so what the guest held in memory is lost; its volume is as the guest left it"
	if got := instance(r, "a"); got.Message != dropped || got.RestartCount != 0 {
		t.Fatalf("after a cold wake the report says %q (restartCount %d), want %q and no restart spent", got.Message, got.RestartCount, dropped)
	}
	after, err := os.ReadFile(vol)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("the volume changed across a cold wake; it must be kept as the guest left it")
	}
	if _, err := os.Stat(h.snapshot("a")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the snapshot that could not be restored is still kept (%v)", err)
	}
}

func TestARequestForAnAppWhoseWakeJustFailedIsToldItWaitsForItsRestartAndWakesNothing(t *testing.T) {
	h := newHost(t)
	d, w := h.failingWakes(t)
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	a.Config.RestartPolicy = desired.RestartPolicy{MaxRestarts: 3, InitialBackoffMs: 600000, MaxBackoffMs: 600000, BackoffFactor: 2, ResetAfterMs: 600000}
	h.asleep(t, d, a)
	w.failWakes.Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const failed = "wake a: the microVM could not be woken: QEMU refused the incoming migration; its memory snapshot was dropped and it is booted again from its volume"
	if err := d.Wake(ctx, "a"); err == nil || err.Error() != failed {
		t.Fatalf("the failed wake answered %v, want %q", err, failed)
	}
	for range 3 {
		if err := d.Wake(ctx, "a"); err == nil || err.Error() != "wake a: it failed and waits for its restart" {
			t.Fatalf("a request during the failed wake's backoff was answered %v, want that it waits for its restart", err)
		}
	}
	if n := len(w.wakeAttempts()); n != 1 {
		t.Fatalf("%d wakes, want 1: requests during the backoff wake nothing", n)
	}
}

// heldVolumes are volume files whose first Converge of volume hold rings
// held and then waits until release is closed: a pass that makes it is
// held in the middle of acting.
type heldVolumes struct {
	volume.Files
	hold          string
	once          sync.Once
	held, release chan struct{}
}

func (v *heldVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.VolumeID == v.hold {
		v.once.Do(func() {
			close(v.held)
			<-v.release
		})
	}
	return v.Files.Converge(ctx, spec)
}

func TestAPassDoesNotWakeAnAppARequestWokeWhileThePassWasActing(t *testing.T) {
	h := newHost(t)
	deps, w := h.wakeDeps(t)
	vols := &heldVolumes{Files: deps.Volumes.(volume.Files), hold: "c-data", held: make(chan struct{}), release: make(chan struct{})}
	deps.Volumes = vols
	d, _ := h.run(t, deps)
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	h.asleep(t, d, a)

	// The document now asks a running, and a new app c (stopped) with a
	// volume: the pass that plans a's wake makes c's volume before it
	// dispatches the wake, and is held there.
	a.DesiredState = desired.StateRunning
	h.write(t, doc(a, h.app("c", "c1", withState(desired.StateStopped))))
	<-vols.held
	passEnded := d.afterPass()
	// Meanwhile a request wakes a.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	close(vols.release)
	<-passEnded
	afterPasses(d, 2)
	if n := len(w.wakeAttempts()); n != 1 {
		t.Fatalf("a was woken %d times: the held pass acted on its plan from before the request's wake", n)
	}
	r := h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	if got := instance(r, "a"); got.Message != "" || got.RestartCount != 0 {
		t.Fatalf("a is running with message %q and restartCount %d; want neither", got.Message, got.RestartCount)
	}
}

func TestADaemonClosedDuringAWakeKeepsTheSnapshotForTheNextOneToRestore(t *testing.T) {
	h := newHost(t)
	deps, w := h.wakeDeps(t)
	d, stop := h.run(t, deps)
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	h.asleep(t, d, a)

	w.hangWakes.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- d.Wake(ctx, "a") }()
	<-w.woke
	stop()
	if err := <-woke; !errors.Is(err, ErrClosed) {
		t.Fatalf("the wake of a closing daemon answered %v, want ErrClosed", err)
	}
	if _, err := os.Stat(h.snapshot("a")); err != nil {
		t.Fatalf("the snapshot is gone after the daemon closed during its wake (%v); the wake was abandoned, not failed", err)
	}

	// The next daemon restores it, once its first pass has set the host up.
	d, _, _ = h.start(t)
	afterPasses(d, 1)
	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r := h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	if got := instance(r, "a"); got.Message != "" || got.RestartCount != 0 {
		t.Fatalf("a woke with message %q and restartCount %d; want it restored, no restart spent", got.Message, got.RestartCount)
	}
}
