package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// closingVolumes are volume files whose teardown of volume hold rings held
// and then ends only once its context is over, having deleted the volume
// all the same: a deletion that finishes as the daemon closes.
type closingVolumes struct {
	volume.Files
	hold string
	held chan struct{}
}

func (v *closingVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.VolumeID == v.hold && spec.State == volume.Absent {
		close(v.held)
		<-ctx.Done()
		return v.Files.Converge(context.WithoutCancel(ctx), spec)
	}
	return v.Files.Converge(ctx, spec)
}

// A teardown that ends while the daemon closes is recorded: the next
// daemon reports the volume deleted at the size it had, as one that saw
// it deleted does.
func TestATeardownThatEndsWhileTheDaemonClosesIsRecorded(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	files := deps.Volumes.(volume.Files)
	vols := &closingVolumes{Files: files, hold: "b-data", held: make(chan struct{})}
	deps.Volumes = vols
	_, stop := h.run(t, deps)
	b := h.app("b", "b1")
	h.write(t, doc(b))
	h.waitFor(t, "b running", allIn(reported.InstanceRunning, "b"))

	// Asked absent at a size other than it has: the report says the size
	// it was deleted at only when the deletion was recorded.
	gone := doc()
	gone.Volumes = append(gone.Volumes, desired.DesiredVolume{VolumeId: b.VolumeId, AppId: b.AppId, SizeBytes: 8 << 20, DesiredState: desired.Absent})
	h.write(t, gone)
	select {
	case <-vols.held:
	case <-time.After(time.Minute):
		t.Fatal("b's volume was never torn down")
	}
	stop()
	if _, err := os.Stat(files.Path("b-data")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the teardown did not delete b's volume: %v", err)
	}

	deps, _, err = h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	h.run(t, deps)
	h.waitFor(t, "b's volume reported deleted at the size it had", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "b-data")
		return v != nil && v.State == reported.VolumeDeleted && v.SizeBytes == 1<<20
	})
}

// racedVolumes are volume files whose grow of volume hold waits, saying so
// on growing, and, once armed, whose next reading of the free space (which
// a pass makes right after it lists the volumes) lets that grow go on and
// returns only when its worker committed it (told by the measurement the
// worker makes of a grown volume): that pass plans on a listing taken
// before the grow. pass is that pass's end.
type racedVolumes struct {
	volume.Files
	d                *Daemon
	hold             string
	growSize         uint64
	growing, release chan struct{}
	committed        chan struct{}
	passed           chan (<-chan struct{})
	armed, measure   atomic.Bool
	grows            atomic.Int32
}

func (v *racedVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.VolumeID == v.hold && spec.State == volume.Present && spec.SizeBytes == v.growSize {
		if v.grows.Add(1) == 1 {
			close(v.growing)
			<-v.release
		}
	}
	return v.Files.Converge(ctx, spec)
}

func (v *racedVolumes) FreeBytes(ctx context.Context) (uint64, error) {
	if v.armed.CompareAndSwap(true, false) {
		v.measure.Store(true)
		close(v.release)
		<-v.committed
		v.passed <- v.d.afterPass()
	}
	return 1 << 40, nil
}

func (v *racedVolumes) Usage(ctx context.Context, id string) (volume.Usage, error) {
	if id == v.hold && v.measure.CompareAndSwap(true, false) {
		v.committed <- struct{}{}
	}
	return volume.Usage{TotalBytes: v.growSize}, nil
}

// A pass that listed the volumes before a volume's worker committed leaves
// that volume to the next pass: it plans on what it listed, which the
// commit made untrue. Planned on the size the volume had before its grow,
// it would grow it again, taking its guests down a second time.
func TestAPassDoesNotActOnAVolumeWhoseWorkerCommittedAfterItWasListed(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	vols := &racedVolumes{Files: deps.Volumes.(volume.Files), hold: "b-data", growSize: 2 << 20,
		growing: make(chan struct{}), release: make(chan struct{}),
		committed: make(chan struct{}), passed: make(chan (<-chan struct{}), 1)}
	deps.Volumes = vols
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	vols.d = d
	h.runOpened(t, d)
	b := h.app("b", "b1")
	h.write(t, doc(b))
	h.waitFor(t, "b running", allIn(reported.InstanceRunning, "b"))

	grown := doc(b)
	grown.Volumes[0].SizeBytes = vols.growSize
	h.write(t, grown)
	select {
	case <-vols.growing:
	case <-time.After(time.Minute):
		t.Fatal("b's volume was never grown")
	}
	vols.armed.Store(true)
	var passed <-chan struct{}
	select {
	case passed = <-vols.passed:
	case <-time.After(time.Minute):
		t.Fatal("no pass listed the volumes while the grow was held")
	}
	<-passed
	d.mu.Lock()
	v := d.vols.byID["b-data"]
	busy := v != nil && v.busy
	d.mu.Unlock()
	if n := vols.grows.Load(); n != 1 || busy {
		t.Fatalf("the pass that listed b's volume before its grow committed grew it again (grows %d, work in flight %v)", n, busy)
	}
	h.waitFor(t, "b running on its grown volume", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "b-data")
		return stateOf(r, "b") == reported.InstanceRunning && v != nil && v.State == reported.VolumeReady && v.SizeBytes == vols.growSize
	})
	if n := vols.grows.Load(); n != 1 {
		t.Fatalf("b's volume was grown %d times; want once", n)
	}
}

// failingVolumes are volume files whose making of volume fail always
// fails; calls counts its attempts.
type failingVolumes struct {
	volume.Files
	fail  string
	calls atomic.Int32
}

func (v *failingVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.VolumeID == v.fail && spec.State == volume.Present {
		v.calls.Add(1)
		return volume.Volume{VolumeID: spec.VolumeID}, &volume.Error{VolumeID: spec.VolumeID, Err: errors.New("the disk is on fire")}
	}
	return v.Files.Converge(ctx, spec)
}

// A volume's failed action is remembered across a restart: the next
// daemon waits for its backoff, and reports why, rather than trying it
// again at once.
func TestAFailedVolumeActionsBackoffOutlivesARestart(t *testing.T) {
	h := newHost(t)
	// The first daemon's clock is an hour ahead of the second's, so the
	// failure it records waits an hour more by the second's: any attempt
	// the second makes is one that forgot the backoff.
	h.offset.Store(int64(time.Hour))
	run := func() (*failingVolumes, func()) {
		deps, _, err := h.deps(false)
		if err != nil {
			t.Fatal(err)
		}
		vols := &failingVolumes{Files: deps.Volumes.(volume.Files), fail: "b-data"}
		deps.Volumes = vols
		_, stop := h.run(t, deps)
		return vols, stop
	}
	failed := func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "b-data")
		return v != nil && v.State == reported.VolumeFailed && strings.Contains(v.Message, "could not be made (tried again at ") && strings.Contains(v.Message, "the disk is on fire")
	}
	first, stop := run()
	h.write(t, doc(h.app("b", "b1")))
	h.waitFor(t, "b's volume failed", failed)
	if first.calls.Load() == 0 {
		t.Fatal("the volume was reported failed without an attempt")
	}
	stop()

	h.offset.Store(0)
	second, _ := run()
	passes := 0
	h.deadlineWait(t, func() bool { passes++; return passes > 3 })
	if n := second.calls.Load(); n != 0 {
		t.Fatalf("the restarted daemon tried the failed volume %d times before its backoff ended", n)
	}
	h.waitFor(t, "b's volume reported failed, with its retry, by the restarted daemon", failed)
}
