package daemon

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/volume"
	"alpnib.dev/nibrunner/volume/volumetest"
)

// seedOpTimeout is the pass's adapter budget in the seed tests: a seed held
// for many times it still ends ready.
const seedOpTimeout = 200 * time.Millisecond

// seeded puts a tar.gz of one incompressible 1 MiB file in h's store and
// returns the volumes of a document running "seeded" on a volume made
// from it and "quick" on an empty one, and the archive's size.
func seeded(t *testing.T, h *host) (*desired.HostDesiredState, int) {
	t.Helper()
	blob := make([]byte, 1<<20)
	_, _ = rand.Read(blob)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: "blob", Mode: 0o644, Size: int64(len(blob)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(blob)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := store.NewDir(filepath.Join(h.dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), "seeds/big.tar.gz", bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	d := doc(h.app("seeded", "s1"), h.app("quick", "q1"))
	d.Volumes[0].SizeBytes = 16 << 20
	d.Volumes[0].InitialContents = &desired.InitialContents{Digest: desired.Sha256Digest(hex.EncodeToString(sum[:])), ObjectKey: "seeds/big.tar.gz", DestinationPath: "/srv"}
	return d, buf.Len()
}

// runSeeding runs a daemon on h whose volumes are real ext4 files seeded
// from gated (and formatted by mke2fs, when not ""), with a pass budget of
// seedOpTimeout.
func runSeeding(t *testing.T, h *host, gated *volumetest.Gated, mke2fs ...string) func() {
	t.Helper()
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	vols, err := volume.NewLocal(filepath.Join(h.dir, "volumes"), gated)
	if err != nil {
		t.Fatal(err)
	}
	if len(mke2fs) > 0 {
		vols.Mke2fs = mke2fs[0]
	}
	deps.Volumes = vols
	cfg := h.config()
	cfg.OpTimeout = seedOpTimeout
	d, err := Open(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return h.runOpened(t, d)
}

func gatedStore(t *testing.T, h *host, after int64) *volumetest.Gated {
	t.Helper()
	st, err := store.NewDir(filepath.Join(h.dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	return &volumetest.Gated{Store: st, After: after}
}

// waitBlocked waits for the seed's fetch to be held.
func waitBlocked(t *testing.T, g *volumetest.Gated) {
	t.Helper()
	select {
	case <-g.Blocked():
	case <-time.After(time.Minute):
		t.Fatal("the seed's fetch never began")
	}
}

func TestASeedLongerThanThePassBudgetBecomesReadyWhileOtherAppsConverge(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs")
	h := newHost(t)
	d, size := seeded(t, h)
	half := int64(size / 2)
	gated := gatedStore(t, h, half)
	runSeeding(t, h, gated)
	h.write(t, d)
	waitBlocked(t, gated)
	held := time.Now()

	// While the seed is held halfway, the other app starts and the report
	// says how far the seed came.
	fetching := "fetching the archive, " + bytesOf(half) + " of " + bytesOf(int64(size))
	h.waitFor(t, "quick running and the seed's progress reported", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return stateOf(r, "quick") == reported.InstanceRunning && v != nil && v.State == reported.VolumePending && strings.Contains(v.Message, fetching)
	})
	r := h.readReport(t)
	if in := instance(r, "seeded"); in == nil || in.State != reported.InstancePending || !strings.Contains(in.Message, "its volume seeded-data is not ready: being made from initialContents") {
		t.Fatalf("the app on the volume being seeded is reported as %+v", in)
	}
	// The seed outlives many times the pass's budget: its fetch is not
	// cut off, and not begun again.
	if wait := 5*seedOpTimeout - time.Since(held); wait > 0 {
		<-time.After(wait)
	}
	if n := gated.Cancelled.Load(); n != 0 {
		t.Fatalf("the seed's fetch was cancelled %d times while it was held past the pass budget", n)
	}
	gated.Release()
	h.waitFor(t, "the seeded volume ready and its app running", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && v.State == reported.VolumeReady && v.Message == "" && stateOf(r, "seeded") == reported.InstanceRunning
	})
	if n := gated.Gets.Load(); n != 1 {
		t.Fatalf("the archive was fetched %d times; want once", n)
	}
}

func TestASeedInterruptedByARestartIsFetchedAgainAndTheReportSaysSo(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs")
	h := newHost(t)
	// The daemon's clock is far from the machine's: when the interrupted
	// attempt began is on the daemon's.
	h.offset.Store(int64(1000 * time.Hour))
	d, size := seeded(t, h)
	half := int64(size / 2)
	first := gatedStore(t, h, half)
	stop := runSeeding(t, h, first)
	began := h.clock().Now().UTC().Truncate(time.Second)
	h.write(t, d)
	waitBlocked(t, first)
	h.waitFor(t, "the seed's progress reported", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && strings.Contains(v.Message, "fetching the archive, "+bytesOf(half))
	})
	stop()
	if first.Cancelled.Load() == 0 {
		t.Fatal("the daemon closed without ending the seed's fetch")
	}

	second := gatedStore(t, h, half)
	runSeeding(t, h, second)
	waitBlocked(t, second)
	r := h.waitFor(t, "the restarted seed reported", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && strings.Contains(v.Message, "restarted: an attempt begun at ")
	})
	msg := volumeOf(r, "seeded-data").Message
	if !strings.Contains(msg, "interrupted by a restart after fetching "+bytesOf(half)) || !strings.Contains(msg, "fetched again from the start") {
		t.Fatalf("the restarted seed is reported as %q", msg)
	}
	_, rest, _ := strings.Cut(msg, "an attempt begun at ")
	at, err := time.Parse(time.RFC3339, strings.TrimSuffix(strings.Fields(rest + " ")[0], ","))
	if err != nil || at.Before(began) || at.After(h.clock().Now()) {
		t.Fatalf("the restarted seed says its interrupted attempt began at %s (%v), not between %s and now by the daemon's clock", at, err, began)
	}
	second.Release()
	h.waitFor(t, "the seeded volume ready and its app running", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && v.State == reported.VolumeReady && stateOf(r, "seeded") == reported.InstanceRunning
	})
}

func TestASeedInterruptedWhileFormattingResumesAfterARestartWithoutFetchingAgain(t *testing.T) {
	testenv.RequireRoot(t)
	mke2fs := testenv.RequireCommand(t, "mke2fs")
	h := newHost(t)
	d, _ := seeded(t, h)
	tools := t.TempDir()
	// The first daemon's mke2fs never ends: the daemon is stopped while it
	// runs, with the archive fetched whole. The second's waits for the
	// test's word, so the report can be read while the seed is resumed.
	hang := filepath.Join(tools, "hang")
	goOn := filepath.Join(tools, "go-on")
	waiting := filepath.Join(tools, "waiting")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(waiting, []byte("#!/bin/sh\nwhile [ ! -e "+goOn+" ]; do sleep 0.02; done\nexec "+mke2fs+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	first := gatedStore(t, h, 1<<62)
	stop := runSeeding(t, h, first, hang)
	h.write(t, d)
	h.waitFor(t, "the seed formatting", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && strings.Contains(v.Message, "writing the filesystem")
	})
	stop()

	second := gatedStore(t, h, 1<<62)
	runSeeding(t, h, second, waiting)
	r := h.waitFor(t, "the resumed seed reported", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && strings.Contains(v.Message, "resumed: an attempt begun at ")
	})
	if msg := volumeOf(r, "seeded-data").Message; !strings.Contains(msg, "which is unpacked without fetching it again") {
		t.Fatalf("the resumed seed is reported as %q", msg)
	}
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "the seeded volume ready and its app running", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "seeded-data")
		return v != nil && v.State == reported.VolumeReady && stateOf(r, "seeded") == reported.InstanceRunning
	})
	if n := second.Gets.Load(); n != 0 {
		t.Fatalf("the resumed seed fetched the archive %d times; want none", n)
	}
}

// bytesOf is how the report's sentences begin to write n bytes.
func bytesOf(n int64) string { return strconv.FormatInt(n, 10) + " bytes" }

// A seed of a volume the next document drops is given up at once, not
// left to run for its budget (hours), and leaves nothing behind: no
// archive, no half-fetched part, no staged tree, no volume.
func TestASeedOfAVolumeTheDocumentDropsIsGivenUpAndLeavesNothing(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs")
	h := newHost(t)
	d, _ := seeded(t, h)
	gated := gatedStore(t, h, 64<<10)
	runSeeding(t, h, gated)
	h.write(t, d)
	waitBlocked(t, gated)

	h.write(t, doc(h.app("quick", "q1")))
	dm := h.daemon.Load()
	if !h.until(t, time.Minute, func() bool {
		dm.mu.Lock()
		defer dm.mu.Unlock()
		v := dm.vols.byID["seeded-data"]
		return gated.Cancelled.Load() > 0 && (v == nil || !v.busy)
	}) {
		t.Fatalf("the seed of the dropped volume was not given up (its fetch was cancelled %d times)", gated.Cancelled.Load())
	}
	entries, err := os.ReadDir(filepath.Join(h.dir, "volumes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), "seeded-data") {
			t.Errorf("the seed given up left %s behind", e.Name())
		}
	}
	h.waitFor(t, "quick running", allIn(reported.InstanceRunning, "quick"))
}
