package qemu

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/guest"
)

// BenchmarkCheckpointFreezeOfARunningGuest checkpoints the 1 GiB volume of
// a running guest that rewrites files on it the whole time, the volume
// holding 200 MiB (50 files of 4 MiB of random bytes under /data): per
// checkpoint, how long the tenant's filesystem stays frozen (freeze
// request, sparse copy, thaw request) and the bytes the copy writes over
// the bytes the volume holds.
func BenchmarkCheckpointFreezeOfARunningGuest(b *testing.B) {
	testenv.RequireRoot(b)
	f := newFixture(b)
	tree := filepath.Join(f.dir, "tree")
	data := filepath.Join(tree, guest.VolumeUpperDir, "data")
	os.MkdirAll(data, 0o755)
	buf := make([]byte, 4<<20)
	for i := range 50 {
		rand.Read(buf)
		os.WriteFile(filepath.Join(data, fmt.Sprint(i)), buf, 0o644)
	}
	os.Remove(f.volume)
	if out, err := exec.Command(testenv.RequireCommand(b, "mke2fs"), "-q", "-F", "-t", "ext4", "-d", tree, f.volume, "1G").CombinedOutput(); err != nil {
		b.Fatalf("make the volume: %v\n%s", err, out)
	}
	v := newVMM(b, f.dir, nil)
	ctx := context.Background()
	spec := f.writerSpec(b, "bench")
	b.Cleanup(func() { _ = v.Stop(context.Background(), spec.AppID) })
	st, err := v.Start(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	waitWriting(b, st.Endpoint, 20, 2*time.Minute)
	var frozen, worst time.Duration
	var written, used int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		img := filepath.Join(f.dir, "ckpt.img")
		snap, err := checkpoint.Snapshot(ctx, checkpoint.Volume{ID: "bench", Path: f.volume, Freezer: appFreezer{v, spec.AppID}}, img, 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		frozen += snap.Frozen
		worst = max(worst, snap.Frozen)
		written, used = snap.Written, snap.Data
		b.StopTimer()
		os.Remove(img)
		b.StartTimer()
	}
	b.ReportMetric(float64(frozen.Milliseconds())/float64(b.N), "frozen-ms/op")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-frozen-ms")
	b.ReportMetric(float64(written)/(1<<20), "written-MiB")
	b.ReportMetric(float64(used)/(1<<20), "used-MiB")
}
