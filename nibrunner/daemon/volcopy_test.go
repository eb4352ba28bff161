package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// growHeldVolumes holds the first Converge that grows volume hold (asks
// it bigger than it was made), until release is closed.
type growHeldVolumes struct {
	volume.Files
	hold          string
	size          uint64
	once          sync.Once
	held, release chan struct{}
	growing       atomic.Bool
}

func (v *growHeldVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.VolumeID == v.hold && spec.SizeBytes > v.size {
		v.once.Do(func() {
			v.growing.Store(true)
			close(v.held)
			<-v.release
		})
		defer v.growing.Store(false)
	}
	return v.Files.Converge(ctx, spec)
}

// copySpy counts the checkpoints created while the volume is growing.
type copySpy struct {
	Checkpoints
	vols       *growHeldVolumes
	duringGrow atomic.Int32
	created    chan struct{}
	onceDo     sync.Once
}

func (c *copySpy) Create(ctx context.Context, id string, vol checkpoint.Volume) (CheckpointInfo, error) {
	if c.vols.growing.Load() {
		c.duringGrow.Add(1)
	}
	info, err := c.Checkpoints.Create(ctx, id, vol)
	if err == nil {
		c.onceDo.Do(func() { close(c.created) })
	}
	return info, err
}

// A checkpoint asked while its volume grows is copied after the grow, not
// from a file being resized.
func TestACheckpointAskedWhileItsVolumeGrowsIsCopiedAfterTheGrow(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	vols := &growHeldVolumes{Files: deps.Volumes.(volume.Files), hold: "v-data", size: 1 << 20, held: make(chan struct{}), release: make(chan struct{})}
	deps.Volumes = vols
	spy := &copySpy{Checkpoints: deps.Checkpoints, vols: vols, created: make(chan struct{})}
	deps.Checkpoints = spy
	d, stop := h.run(t, deps)
	defer stop()

	v := h.app("v", "v1")
	h.write(t, doc(v))
	h.waitFor(t, "v running", allIn(reported.InstanceRunning, "v"))

	grown := doc(v)
	grown.Volumes[0].SizeBytes = 2 << 20
	grown.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "c1", VolumeId: v.VolumeId, DesiredState: desired.Present}}
	h.write(t, grown)
	<-vols.held
	// Passes go on while the grow is held; the checkpoint's job runs and
	// is refused each time, until the grow ends.
	afterPasses(d, 3)
	close(vols.release)
	<-spy.created
	if n := spy.duringGrow.Load(); n != 0 {
		t.Fatalf("the checkpoint was copied %d time(s) while its volume was being grown", n)
	}
}
