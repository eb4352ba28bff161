package qemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guest"
)

// noteWithin writes the counter's note (os.WriteFile: no fsync) and fails
// the test unless the write is done within wait: a write to a frozen
// volume waits for the thaw.
func noteWithin(t testing.TB, endpoint, body string, wait time.Duration) {
	t.Helper()
	name := strconv.Quote(body)
	if len(body) > 64 {
		name = fmt.Sprintf("of %d bytes", len(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+endpoint+"/note", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("write the note %s within %s: %v (is the volume still frozen?)", name, wait, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("write the note %s: %s %s", name, resp.Status, b)
	}
}

// volumeNote reads the counter's note from the volume file itself, as a
// checkpoint or an export of the sleeping app would find it.
func volumeNote(t testing.TB, volume string) string {
	t.Helper()
	out, err := exec.Command(testenv.RequireCommand(t, "debugfs"), "-R", "cat /"+guest.VolumeUpperDir+"/data/note", volume).Output()
	if err != nil {
		t.Fatalf("debugfs cat of the note on %s: %v", volume, err)
	}
	return string(out)
}

func TestASleepFreezesTheVolumeSoItsFileHoldsTheLatestWritesAndTheWakeThawsIt(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	// The init's own thaw comes too late to be the one this test sees:
	// every write below that goes through was let go by a thaw the host sent.
	realBound := sleepFreezeBound
	sleepFreezeBound = 10 * time.Minute
	defer func() { sleepFreezeBound = realBound }()
	const writeWait = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	spec := f.spec(t, "frozensleep")
	st := started(t, ctx, v, spec, &logs)
	// The first answer may have taken retries; the count goes on from it.
	count, _ := strconv.Atoi(get(t, st.Endpoint, "/count", 2*time.Minute))
	sameProcess := func(when string, wait time.Duration) {
		t.Helper()
		count++
		if got := get(t, st.Endpoint, "/count", wait); got != strconv.Itoa(count) {
			t.Fatalf("%s the count is %s, want %d (the same process, its memory kept)", when, got, count)
		}
	}

	// A volume a checkpoint holds frozen cannot be frozen again: the sleep
	// is refused, and the guest runs on with the checkpoint's freeze.
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Minute)
	if err := v.FreezeVolume(fctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	fcancel()
	if err := v.Sleep(ctx, spec.AppID); !errors.Is(err, ErrFreeze) || !strings.Contains(err.Error(), "keeps running") {
		t.Fatalf("a sleep while the volume is frozen by someone else: %v, want ErrFreeze saying it keeps running", err)
	}
	if v.HasSnapshot(spec.AppID) {
		t.Fatal("a refused sleep left a snapshot")
	}
	sameProcess("after the refused sleep", 10*time.Second)
	if err := v.ThawVolume(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}

	// A sleep that fails after the freeze (the state file cannot be
	// written: a folder is in its way) resumes the guest and thaws it.
	blocker := filepath.Join(v.snapDir(spec.AppID), stateFile+".tmp", "in-the-way")
	if err := os.MkdirAll(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := v.Sleep(ctx, spec.AppID); err == nil || errors.Is(err, ErrFreeze) || strings.Contains(err.Error(), "still frozen") {
		t.Fatalf("a sleep whose state file cannot be written: %v, want a failure after the freeze, thawed", err)
	}
	os.RemoveAll(filepath.Dir(blocker))
	noteWithin(t, st.Endpoint, "written after a failed sleep", writeWait)
	sameProcess("after the failed sleep", 10*time.Second)

	// Written without fsync and put to sleep at once: the volume file
	// holds the note and is a clean filesystem, not only the snapshot.
	noteWithin(t, st.Endpoint, "written just before the sleep", writeWait)
	if err := v.Sleep(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	if got := volumeNote(t, f.volume); got != "written just before the sleep" {
		t.Fatalf("the sleeping app's volume file holds the note %q, want the one written just before the sleep", got)
	}
	e2fsck(t, f.volume)

	st, err := v.Wake(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Restored {
		t.Fatalf("the wake booted cold: %+v", st)
	}
	sameProcess("after the wake", 30*time.Second)
	noteWithin(t, st.Endpoint, "written after the wake", writeWait)

	// A snapshot of a build before the freeze holds a volume that is not
	// frozen: the wake's thaw leaves it as it is.
	if err := v.sleep(ctx, spec.AppID, false); err != nil {
		t.Fatal(err)
	}
	if st, err = v.Wake(ctx, spec); err != nil || !st.Restored {
		t.Fatalf("the wake of an unfrozen snapshot: %+v, %v; want it restored", st, err)
	}
	sameProcess("after the wake of an unfrozen snapshot", 30*time.Second)
	noteWithin(t, st.Endpoint, "written after the wake", writeWait)
	if err := v.Stop(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	if got := volumeNote(t, f.volume); got != "written after the wake" {
		t.Fatalf("after the woken guest stopped its volume holds the note %q, want the one written after the wake", got)
	}
}
