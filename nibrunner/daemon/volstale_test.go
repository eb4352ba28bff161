package daemon

import (
	"context"
	"os"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// Volume work that waited for its turn across documents goes on only if
// the document in force still asks it: a teardown of a volume that a later
// document asks present again is dropped, and the tenant's data stays.
func TestATeardownQueuedBehindAnotherVolumesWorkIsDroppedWhenTheVolumeIsAskedPresentAgain(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	files := deps.Volumes.(volume.Files)
	vols := &heldVolumes{Files: files, hold: "a-data", held: make(chan struct{}), release: make(chan struct{})}
	deps.Volumes = vols
	cfg := h.config()
	cfg.VolumeJobs = 1 // one volume's work at a time: b's waits behind a's
	d, err := Open(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	h.runOpened(t, d)

	b := h.app("b", "b1")
	h.write(t, doc(b))
	h.waitFor(t, "b running", allIn(reported.InstanceRunning, "b"))
	bFile := files.Path("b-data")
	before, err := os.Stat(bFile)
	if err != nil {
		t.Fatal(err)
	}

	// a's volume is made next and held there, with the one turn.
	a := h.app("a", "a1")
	h.write(t, doc(a, b))
	<-vols.held
	// b goes, and its volume with it: the teardown waits for the turn.
	gone := doc(a)
	gone.Volumes = append(gone.Volumes, desired.DesiredVolume{VolumeId: b.VolumeId, AppId: b.AppId, SizeBytes: 1 << 20, DesiredState: desired.Absent})
	h.write(t, gone)
	if !h.until(t, time.Minute, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		v := d.vols.byID["b-data"]
		return v != nil && v.busy && v.work.Kind == plan.Teardown
	}) {
		t.Fatal("b's teardown was never handed to its worker")
	}
	// Then b is asked back, volume and all, before the teardown's turn.
	back := doc(a, b)
	h.write(t, back)
	if !h.until(t, time.Minute, func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.acc.doc != nil && len(d.acc.doc.Instances) == 2
	}) {
		t.Fatal("the document asking b back was never taken")
	}
	close(vols.release)

	h.waitFor(t, "a and b running", allIn(reported.InstanceRunning, "a", "b"))
	after, err := os.Stat(bFile)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Fatal("b's volume was deleted and made again after a document asking it present was accepted")
	}
}
