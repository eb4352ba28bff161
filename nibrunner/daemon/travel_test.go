package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/volume"
)

// shelf is the store between two test hosts as Travel sees it: the
// snapshots sent beside checkpoint keys, and what each host was asked.
type shelf struct {
	mu        sync.Mutex
	saved     map[string]int64  // app -> when its snapshot on host A was saved
	beside    map[string]string // checkpoint key -> "app@deployment"
	forgotten []string
	refuse    string // Fetch's error, when set
}

// travelOf is one host's Travel over the shelf; dep is the deployment the
// host's sleeping app was in (what a stamp would say).
type travelOf struct {
	s   *shelf
	dep string
}

func (t travelOf) SavedAt(app string) int64 {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	return t.s.saved[app]
}

func (t travelOf) Send(_ context.Context, app string, saved int64, key string) (int64, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.saved[app] != saved {
		return 0, fmt.Errorf("saved at %d, not %d", t.s.saved[app], saved)
	}
	t.s.beside[key] = app + "@" + t.dep
	return 1234, nil
}

func (t travelOf) Fetch(_ context.Context, app, key string) (string, int64, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.refuse != "" {
		return "", 0, fmt.Errorf("%s", t.s.refuse)
	}
	got, ok := t.s.beside[key]
	if !ok {
		return "", 0, nil
	}
	a, dep, _ := strings.Cut(got, "@")
	if a != app {
		return "", 0, fmt.Errorf("the snapshot beside %s is %s's", key, a)
	}
	return dep, 1234, nil
}

func (t travelOf) Forget(_ context.Context, key string) error {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	delete(t.s.beside, key)
	t.s.forgotten = append(t.s.forgotten, key)
	return nil
}

// restoringFiles is volume.Files that says a volume seeded from
// initialContents was restored from a checkpoint (volume.Local tells by
// the object's format).
type restoringFiles struct{ volume.Files }

func (f restoringFiles) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	v, err := f.Files.Converge(ctx, spec)
	if err == nil && v.Created && spec.InitialContents != nil {
		v.Restored = true
	}
	return v, err
}

// wakes counts the VMM's wakes and cold starts.
type wakes struct {
	vmm.VMM
	mu           sync.Mutex
	woke, booted []string
}

func (w *wakes) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	w.mu.Lock()
	w.booted = append(w.booted, spec.AppID)
	w.mu.Unlock()
	return w.VMM.Start(ctx, spec)
}

func (w *wakes) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	w.mu.Lock()
	w.woke = append(w.woke, spec.AppID)
	w.mu.Unlock()
	return w.VMM.Wake(ctx, spec)
}

func (w *wakes) counts() (woke, booted int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.woke), len(w.booted)
}

// The daemon's side of waking an app on another host: a checkpoint of an
// asleep app's volume sends its snapshot beside the checkpoint's object
// (and one of an awake app's sends none, clearing what an earlier one
// left); a host that restores a volume from that checkpoint fetches it,
// and the app arrives asleep in the snapshot's deployment, so its first
// start is a wake, not a boot; deleting the checkpoint forgets its
// snapshot.
func TestAnAppAsleepTravelsWithItsVolumesCheckpointAndArrivesAsleep(t *testing.T) {
	ctx := context.Background()
	s := &shelf{saved: map[string]int64{}, beside: map[string]string{}}

	// Host A: the app runs, sleeps, and its volume is checkpointed.
	a := newHost(t)
	depsA, _, err := a.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	depsA.Travel = travelOf{s: s, dep: "blog-1"}
	dA, _ := a.run(t, depsA)
	a.watch(dA)
	docA := doc(a.app("blog", "blog-1", withState(desired.StateOnRequest)))
	a.write(t, docA)
	a.waitFor(t, "blog running on A", allIn(reported.InstanceRunning, "blog"))

	// Awake: a checkpoint carries no snapshot, and clears the place.
	s.beside["checkpoints/awake.nibsparse"] = "blog@stale"
	docA.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "awake", VolumeId: "blog-data", DesiredState: desired.Present}}
	a.write(t, docA)
	a.waitFor(t, "the awake checkpoint ready", checkpointIs("awake", reported.CheckpointReady))
	if _, ok := s.beside["checkpoints/awake.nibsparse"]; ok {
		t.Errorf("a checkpoint of an awake app's volume left a snapshot beside it: %v", s.beside)
	}

	if err := dA.Sleep(ctx, "blog"); err != nil {
		t.Fatal(err)
	}
	a.waitFor(t, "blog asleep on A", allIn(reported.InstanceIdle, "blog"))
	s.mu.Lock()
	s.saved["blog"] = 1700000000000
	s.mu.Unlock()
	docA.Checkpoints = append(docA.Checkpoints, desired.DesiredCheckpoint{CheckpointId: "move-1", VolumeId: "blog-data", DesiredState: desired.Present})
	a.write(t, docA)
	r := a.waitFor(t, "the move checkpoint ready", checkpointIs("move-1", reported.CheckpointReady))
	var key string
	for _, c := range r.Checkpoints {
		if c.CheckpointId == "move-1" {
			key = string(c.ObjectKey)
		}
	}
	s.mu.Lock()
	sent := s.beside[key]
	s.mu.Unlock()
	if sent != "blog@blog-1" {
		t.Fatalf("beside checkpoint move-1 (%s) the store holds %q; want blog's snapshot (shelf %v)", key, sent, s.beside)
	}

	// Host B restores the volume from it: the app arrives asleep and its
	// first start is a wake.
	b, depsB, w := restoringHost(t, s)
	dB, stopB := b.run(t, depsB)
	b.watch(dB)
	b.write(t, restoreDoc(b, key))
	r = b.waitFor(t, "blog's volume made on B", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "blog-data")
		return v != nil && v.State == reported.VolumeReady
	})
	if in := instance(r, "blog"); in == nil || in.State != reported.InstanceIdle {
		t.Fatalf("when its volume was made on B blog was %+v; want idle (arrived asleep)", in)
	}
	next, stop := b.passes()
	<-next()
	<-next()
	stop()
	if woke, booted := w.counts(); woke+booted != 0 || instance(b.readReport(t), "blog").State != reported.InstanceIdle {
		t.Fatalf("blog, arrived asleep, was woken %d and booted %d times with no request", woke, booted)
	}
	// It stays asleep across a restart of B's daemon (the pass that held
	// its start back for the volume gave it a slot, so its record is kept).
	stopB()
	dB, _ = b.run(t, depsB)
	b.watch(dB)
	next, stop = b.passes()
	<-next()
	<-next()
	stop()
	if woke, booted := w.counts(); woke+booted != 0 || instance(b.readReport(t), "blog").State != reported.InstanceIdle {
		t.Fatalf("blog, arrived asleep, was woken %d and booted %d times after B's daemon restarted", woke, booted)
	}
	if err := dB.Wake(ctx, "blog"); err != nil {
		t.Fatal(err)
	}
	if woke, booted := w.counts(); woke != 1 || booted != 0 {
		t.Errorf("blog's first start on B: %d wakes and %d boots; want one wake", woke, booted)
	}
	if in := instance(b.waitFor(t, "blog awake on B", allIn(reported.InstanceRunning, "blog")), "blog"); in.RestartCount != 0 {
		t.Errorf("the wake counted as a restart: %+v", in)
	}

	// Deleting the checkpoint on A forgets the snapshot beside it.
	docA.Checkpoints[1].DesiredState = desired.Absent
	a.write(t, docA)
	a.waitFor(t, "the move checkpoint gone", func(r *reported.HostReportedState) bool {
		for _, c := range r.Checkpoints {
			if c.CheckpointId == "move-1" {
				return false
			}
		}
		return true
	})
	s.mu.Lock()
	_, still := s.beside[key]
	s.mu.Unlock()
	if still {
		t.Errorf("checkpoint move-1 is deleted and its snapshot is still beside it")
	}
}

// A snapshot the host cannot restore is refused and the app boots cold
// on its restored volume, as if none had come.
func TestAnAppWhoseSnapshotIsRefusedBootsColdOnItsRestoredVolume(t *testing.T) {
	s := &shelf{saved: map[string]int64{}, beside: map[string]string{"checkpoints/x.nibsparse": "blog@blog-1"},
		refuse: "the snapshot was saved by QEMU 7.2.15, and this host runs QEMU 8.2.2"}
	b, deps, w := restoringHost(t, s)
	d, _ := b.run(t, deps)
	b.watch(d)
	b.write(t, restoreDoc(b, "checkpoints/x.nibsparse"))
	b.waitFor(t, "blog booted cold on B", allIn(reported.InstanceRunning, "blog"))
	if woke, booted := w.counts(); woke != 0 || booted != 1 {
		t.Errorf("blog: %d wakes and %d boots; want one cold boot", woke, booted)
	}
	if !strings.Contains(b.log.String(), "boots cold") || !strings.Contains(b.log.String(), "QEMU 8.2.2") {
		t.Errorf("the refusal is not in the log:\n%s", b.log.String())
	}
}

// checkpointIs: checkpoint id is reported in state st.
func checkpointIs(id string, st reported.CheckpointState) func(*reported.HostReportedState) bool {
	return func(r *reported.HostReportedState) bool {
		for _, c := range r.Checkpoints {
			if string(c.CheckpointId) == id {
				return c.State == st
			}
		}
		return false
	}
}

// restoringHost is a host whose volumes say they were restored when made
// from initialContents, with a Travel over s, and the VMM's starts counted.
func restoringHost(t *testing.T, s *shelf) (*host, Deps, *wakes) {
	t.Helper()
	b := newHost(t)
	deps, _, err := b.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	deps.Travel = travelOf{s: s}
	deps.Volumes = restoringFiles{deps.Volumes.(volume.Files)}
	w := &wakes{VMM: deps.VMM}
	deps.VMM = w
	return b, deps, w
}

// restoreDoc lists blog on-request on a volume restored from the
// checkpoint at key.
func restoreDoc(b *host, key string) *desired.HostDesiredState {
	d := doc(b.app("blog", "blog-1", withState(desired.StateOnRequest)))
	d.Volumes[0].InitialContents = &desired.InitialContents{ObjectKey: desired.ObjectKey(key), Digest: desired.Sha256Digest(strings.Repeat("0", 64)), DestinationPath: "/"}
	return d
}
