package qemu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// An app asleep on host A wakes on host B from A's memory snapshot: two
// VMMs with folders of their own, as two hosts have, and one versitygw
// between them. A's volume (as the sleep's freeze left it) and its
// snapshot go up; B fetches both and wakes the app, whose in-memory count
// goes on from A's. The same app booted cold on B, in the same run, is
// what the wake is set against (docs/bench.md).
func TestAnAppAsleepOnOneHostWakesOnAnotherFromItsSnapshotThroughS3(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "fleet")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	objects, err := store.NewS3(ctx, "s3://fleet/travel")
	if err != nil {
		t.Fatal(err)
	}
	var logs testenv.SyncBuffer
	a := newVMM(t, f.dir, &logs)
	spec := f.spec(t, "counter")
	st := started(t, ctx, a, spec, &logs)
	get(t, st.Endpoint, "/whoami", 90*time.Second)
	for range 2 {
		get(t, st.Endpoint, "/count", 5*time.Second)
	}
	if err := a.Sleep(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}

	// Up from A: the volume (here the raw file; the daemon's checkpoint
	// sends its sparse copy), then the snapshot saved before it was read,
	// beside it.
	const volKey = "checkpoints/host-a/sleep-1.ext4"
	saved := a.SnapshotSavedAt(spec.AppID)
	start := time.Now()
	vol, err := os.Open(f.volume)
	if err != nil {
		t.Fatal(err)
	}
	vi, _ := vol.Stat()
	if err := objects.Put(ctx, volKey, vol, vi.Size()); err != nil {
		t.Fatal(err)
	}
	vol.Close()
	volUp := time.Since(start)
	start = time.Now()
	sent, err := a.PutSnapshot(ctx, spec.AppID, saved, objects, TravelPrefix(volKey))
	if err != nil {
		t.Fatal(err)
	}
	snapUp := time.Since(start)
	if _, err := a.PutSnapshot(ctx, spec.AppID, saved+1, objects, TravelPrefix(volKey+".other")); !errors.Is(err, ErrSnapshotChanged) {
		t.Errorf("a snapshot other than the one named was sent: %v", err)
	}

	// Host B: folders of its own, another host port.
	dirB := shortTempDir(t)
	b := newVMM(t, dirB, &logs)
	specB := spec
	specB.VolumePath = filepath.Join(dirB, "vol.ext4")
	specB.Network.HostPort = slot.HostPort(slottest.Free(t))
	start = time.Now()
	rc, _, err := objects.Get(ctx, volKey)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(specB.VolumePath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := out.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	out.Close()
	volDown := time.Since(start)
	start = time.Now()
	_, fetched, err := b.FetchSnapshot(ctx, spec.AppID, objects, TravelPrefix(volKey))
	if err != nil {
		t.Fatal(err)
	}
	snapDown := time.Since(start)
	if why := b.WakeMismatch(ctx, specB); why != "" {
		t.Fatalf("A's snapshot does not fit B: %s", why)
	}
	start = time.Now()
	stB, err := b.Wake(ctx, specB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Stop(context.Background(), spec.AppID) })
	if !stB.Restored {
		t.Fatalf("B booted cold: %s\nconsole:\n%s", stB.WokenCold, console(b, spec.AppID))
	}
	if got := get(t, stB.Endpoint, "/count", 30*time.Second); got != "3" {
		t.Fatalf("on B the count is %s, want 3 (A's memory, which counted 2)", got)
	}
	wake := time.Since(start)
	if err := b.Stop(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}

	// The same app booted cold on B, side by side with the wake.
	start = time.Now()
	stC, err := b.Start(ctx, specB)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, stC.Endpoint, "/count", 90*time.Second); got != "1" {
		t.Fatalf("the cold boot on B counts %s, want 1", got)
	}
	cold := time.Since(start)
	t.Logf("wake anywhere (TCG, 128 MiB guest): volume up %s (%d bytes), snapshot up %s (%d bytes); volume down %s, snapshot down %s (%d bytes); wake on B to its first answer %s; cold boot on B to its first answer %s",
		volUp.Round(time.Millisecond), vi.Size(), snapUp.Round(time.Millisecond), sent, volDown.Round(time.Millisecond),
		snapDown.Round(time.Millisecond), fetched, wake.Round(time.Millisecond), cold.Round(time.Millisecond))
}

// A snapshot from a host this one could not restore it on is refused
// before its state is fetched, with a sentence saying why.
func TestASnapshotFromAnIncompatibleHostIsRefusedBeforeItsStateIsFetched(t *testing.T) {
	objects, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hostA := &VMM{cfg: Config{SnapshotDir: t.TempDir(), Image: guestimage.Image{Version: "gi-1", KernelRelease: "6.1.1"}}, version: "7.2.15"}
	tcg := "tcg"
	hostA.accel.Store(&tcg)
	m := testMachine()
	stamp := hostA.stampOf(m)
	stamp.StateSize, stamp.SavedAtMs = 5, 1000
	dir := hostA.snapDir("app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, stateFile), []byte("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeStamp(dir, stamp); err != nil {
		t.Fatal(err)
	}
	if _, err := hostA.PutSnapshot(ctx, "app", 1000, objects, "app/"); err != nil {
		t.Fatal(err)
	}

	hostB := &VMM{cfg: Config{SnapshotDir: t.TempDir(), Image: guestimage.Image{Version: "gi-1", KernelRelease: "6.1.1"}}, version: "8.2.2"}
	hostB.accel.Store(&tcg)
	_, n, err := hostB.FetchSnapshot(ctx, "app", objects, "app/")
	if !errors.Is(err, ErrNotRestorable) || !strings.Contains(err.Error(), "the snapshot was saved by QEMU 7.2.15, and this host runs QEMU 8.2.2") {
		t.Fatalf("fetch from a host of another QEMU: %v", err)
	}
	if n > 1<<10 {
		t.Errorf("%d bytes fetched for a refused snapshot; its stamp alone is to be read", n)
	}
	if _, err := os.Stat(hostB.snapDir("app")); !os.IsNotExist(err) {
		t.Errorf("the refused snapshot left a folder: %v", err)
	}

	// Same QEMU: fetched whole, and B holds it.
	hostB.version = "7.2.15"
	if _, _, err := hostB.FetchSnapshot(ctx, "app", objects, "app/"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(hostB.snapDir("app"), stateFile)); err != nil || string(b) != "state" || !hostB.HasSnapshot("app") {
		t.Errorf("the fetched state %q, %v", b, err)
	}
	if _, _, err := hostB.FetchSnapshot(ctx, "app", objects, "nothing/"); !errors.Is(err, ErrNoSnapshot) {
		t.Errorf("a fetch of nothing: %v", err)
	}
}
