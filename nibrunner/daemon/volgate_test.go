package daemon

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/volume"
	"alpnib.dev/nibrunner/watch"
)

// brokenVolumes fails every Converge while broken is set (a seed that
// cannot be unpacked), counting the attempts, and says free as its disk's
// free space.
type brokenVolumes struct {
	Volumes
	broken   atomic.Bool
	attempts atomic.Int32
	free     atomic.Uint64
}

func (b *brokenVolumes) Converge(ctx context.Context, spec volume.Spec) (volume.Volume, error) {
	if spec.State == volume.Present && b.broken.Load() {
		b.attempts.Add(1)
		return volume.Volume{}, &volume.Error{VolumeID: spec.VolumeID, Err: errors.New("unpack the seed: a zip bomb")}
	}
	return b.Volumes.Converge(ctx, spec)
}

func (b *brokenVolumes) FreeBytes(context.Context) (uint64, error) { return b.free.Load(), nil }

func openWith(t *testing.T, h *host, wrap func(Volumes) Volumes) *Daemon {
	t.Helper()
	deps, _, err := h.deps(true)
	if err != nil {
		t.Fatal(err)
	}
	deps.Volumes = wrap(deps.Volumes)
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestAVolumeThatFailsIsTriedAgainAfterABackoffNotAtEveryPass(t *testing.T) {
	h := newHost(t)
	b := &brokenVolumes{}
	b.broken.Store(true)
	b.free.Store(1 << 40)
	d := openWith(t, h, func(v Volumes) Volumes { b.Volumes = v; return b })
	ctx := context.Background()
	h.write(t, doc(h.app("a", "a1")))
	if err := d.Offer(ctx, docOf(t, h)); err != nil {
		t.Fatal(err)
	}
	pass := func() {
		t.Helper()
		if err := d.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	if n := b.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts after the first pass, want 1", n)
	}
	vol := volumeOf(h.readReport(t), "a-data")
	if vol == nil || !strings.Contains(vol.Message, "a zip bomb") || !strings.Contains(vol.Message, "tried again at ") {
		t.Fatalf("the failed volume is reported as %+v", vol)
	}
	for range 5 {
		pass()
	}
	if n := b.attempts.Load(); n != 1 {
		t.Fatalf("%d attempts after six passes within the backoff, want 1", n)
	}
	h.offset.Add(int64(2 * time.Second)) // the first backoff is over
	pass()
	pass()
	if n := b.attempts.Load(); n != 2 {
		t.Fatalf("%d attempts once the first backoff was over, want 2", n)
	}
	h.offset.Add(int64(3 * time.Second)) // the second is 4 s
	pass()
	if n := b.attempts.Load(); n != 2 {
		t.Fatalf("%d attempts 3 s into a 4 s backoff, want 2", n)
	}
	b.broken.Store(false)
	h.offset.Add(int64(time.Second))
	pass()
	if vol := volumeOf(h.readReport(t), "a-data"); vol == nil || vol.Message != "" {
		t.Fatalf("the mended volume is reported as %+v", vol)
	}
}

func TestAVolumeIsMadeOnlyWhenTheDiskHasRoomForIt(t *testing.T) {
	h := newHost(t)
	b := &brokenVolumes{}
	b.free.Store(1<<20 + 512<<10) // room for one 1 MiB volume, not two
	d := openWith(t, h, func(v Volumes) Volumes { b.Volumes = v; return b })
	ctx := context.Background()
	h.write(t, doc(h.app("a", "a1"), h.app("b", "b1")))
	if err := d.Offer(ctx, docOf(t, h)); err != nil {
		t.Fatal(err)
	}
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	r := h.readReport(t)
	a, bv := volumeOf(r, "a-data"), volumeOf(r, "b-data")
	if a == nil || a.Message != "" {
		t.Fatalf("the volume with room is reported as %+v", a)
	}
	if bv == nil || !strings.Contains(bv.Message, "volume b-data is not made: it is 1048576 bytes (1.0 MiB)") ||
		!strings.Contains(bv.Message, "has 524288 bytes free for it") {
		t.Fatalf("the volume without room is reported as %+v", bv)
	}
	if in := instance(r, "b"); in == nil || !strings.Contains(in.Message, "b-data") {
		t.Fatalf("b, whose volume has no room, is reported as %+v", in)
	}
	b.free.Store(1 << 30)
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if bv := volumeOf(h.readReport(t), "b-data"); bv == nil || bv.Message != "" {
		t.Fatalf("with room the volume is reported as %+v", bv)
	}
}

// docOf is the document h last wrote, as the watcher reads it.
func docOf(t *testing.T, h *host) watch.Document {
	t.Helper()
	return watch.Document{Data: readFile(t, h.desiredPath())}
}
