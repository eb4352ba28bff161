package daemon

import (
	"context"
	"errors"
	"io/fs"
	"os"
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
