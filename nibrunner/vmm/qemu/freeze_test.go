package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/vmm"
)

// appFreezer is the daemon's binding of a VMM's freezer to one app.
type appFreezer struct {
	v   *VMM
	app string
}

func (a appFreezer) Freeze(ctx context.Context) error { return a.v.FreezeVolume(ctx, a.app) }
func (a appFreezer) Thaw(ctx context.Context) error   { return a.v.ThawVolume(ctx, a.app) }

// writerSpec is the counter with its writer on: it rewrites files on the
// volume without pause.
func (f fixture) writerSpec(t testing.TB, app string) vmm.Spec {
	s := f.spec(t, app)
	s.Command.Environment = map[string]string{"WRITE_FILES": "1"}
	return s
}

// written asks the tenant how many files it has written, waiting up to
// wait for an answer (a TCG boot on a loaded machine is slow).
func written(t testing.TB, endpoint string, wait ...time.Duration) int {
	t.Helper()
	w := 30 * time.Second
	if len(wait) > 0 {
		w = wait[0]
	}
	n, err := strconv.Atoi(get(t, endpoint, "/written", w))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitWriting waits until the tenant has written more than n files, and
// returns how many it has written.
func waitWriting(t testing.TB, endpoint string, n int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if m := written(t, endpoint, within); m > n {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tenant wrote nothing past %d files within %s", n, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func e2fsck(t testing.TB, img string) {
	t.Helper()
	out, err := exec.Command(testenv.RequireCommand(t, "e2fsck"), "-fn", img).CombinedOutput()
	if err != nil {
		t.Fatalf("e2fsck -fn %s: %v\n%s", img, err, out)
	}
}

func TestACheckpointOfAGuestWritingTheWholeTimeIsAFilesystemE2fsckPasses(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := f.writerSpec(t, "busy")
	st := started(t, ctx, v, spec, &logs)
	n := waitWriting(t, st.Endpoint, 20, 2*time.Minute)
	for i := range 3 {
		img := filepath.Join(f.dir, fmt.Sprintf("ckpt-%d.img", i))
		snap, err := checkpoint.Snapshot(ctx, checkpoint.Volume{ID: "busy", Path: f.volume, Freezer: appFreezer{v, spec.AppID}}, img, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("checkpoint %d: frozen %s, %d of %d bytes hold data, %d written", i, snap.Frozen, snap.Data, snap.Size, snap.Written)
		e2fsck(t, img)
		// Thawed: the tenant goes on writing.
		n = waitWriting(t, st.Endpoint, n, 30*time.Second)
	}
}

func TestAFreezeNobodyThawsEndsByItselfAtItsBound(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	v := newVMM(t, f.dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := f.writerSpec(t, "forgotten")
	st, err := v.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Stop(context.Background(), spec.AppID)
	waitWriting(t, st.Endpoint, 5, 2*time.Minute)
	const bound = 3 * time.Second
	fctx, fcancel := context.WithTimeout(ctx, bound)
	frozenAt := time.Now()
	if err := v.FreezeVolume(fctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	fcancel()
	stalled := written(t, st.Endpoint)
	// No thaw is sent. The writer stalls (at most one write was past the
	// freeze's check) and resumes once the guest thaws by itself.
	after := waitWriting(t, st.Endpoint, stalled+1, bound+30*time.Second)
	if waited := time.Since(frozenAt); waited < bound-time.Second {
		t.Errorf("the tenant wrote again %s after the freeze (%d → %d files), before the %s bound passed", waited, stalled, after, bound)
	}
}

const frozenHelperEnv = "NIBRUN_TEST_FROZEN_HELPER_DIR"

func TestHelperFreezesAGuestAndWaitsToBeKilled(t *testing.T) {
	dir := os.Getenv(frozenHelperEnv)
	if dir == "" {
		t.Skip("a helper for TestAGuestLeftFrozenByAKilledDaemonIsThawedByTheNextOne")
	}
	f := fixture{dir: dir, counter: filepath.Join(dir, "counter"), volume: filepath.Join(dir, "vol.ext4")}
	v := newVMM(t, dir, nil)
	spec := f.writerSpec(t, "frozen")
	st, err := v.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitWriting(t, st.Endpoint, 5, 2*time.Minute)
	// Frozen for ten minutes unless someone thaws it.
	fctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := v.FreezeVolume(fctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("FROZEN %d %s\n", st.PID, st.Endpoint)
	time.Sleep(time.Hour)
}

func TestAGuestLeftFrozenByAKilledDaemonIsThawedByTheNextOne(t *testing.T) {
	testenv.RequireRoot(t)
	testImage(t)
	f := newFixture(t)
	// SIGKILLed with the guest frozen.
	_, endpoint := killedHelper(t, "TestHelperFreezesAGuestAndWaitsToBeKilled", frozenHelperEnv+"="+f.dir, "FROZEN")
	stalled := written(t, endpoint)

	v := newVMM(t, f.dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer v.Stop(context.Background(), "frozen")
	start := time.Now()
	if failed := checkpoint.ThawRunning(ctx, v, 30*time.Second); len(failed) != 0 {
		t.Fatalf("thaw at start: %v", failed)
	}
	after := waitWriting(t, endpoint, stalled+1, 30*time.Second)
	t.Logf("thawed %s after the next daemon started; the tenant went from %d to %d files", time.Since(start), stalled, after)
	if got := get(t, endpoint, "/count", 5*time.Second); got != "1" {
		t.Errorf("the thawed guest counts %q, want it serving as before", got)
	}
}
