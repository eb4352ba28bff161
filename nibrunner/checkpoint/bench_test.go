package checkpoint

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// BenchmarkCheckpointOf1GiBVolumeHolding200MiB makes checkpoints of a 1 GiB
// sparse file holding 200 MiB in 50 runs of 4 MiB, frozen by a freezer that
// answers at once (so frozen-ms is the copy: what the tenant waits for,
// less the control channel's round trips), and uploads each to versitygw
// on loopback. written/used is the bytes the copy wrote over the bytes the
// volume holds.
func BenchmarkCheckpointOf1GiBVolumeHolding200MiB(b *testing.B) {
	srv := s3test.Start(b)
	srv.SetEnv(b)
	srv.Bucket(b, "ckpt")
	objects, err := store.NewS3(context.Background(), "s3://ckpt/bench")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	src := filepath.Join(dir, "vol")
	var offsets []int64
	for i := range 50 {
		offsets = append(offsets, int64(i)*(20<<20))
	}
	testenv.SparseFile(b, src, 1<<30, 4<<20, offsets...)
	s, err := Open(context.Background(), Options{Dir: filepath.Join(dir, "ckpt"), Objects: objects, Prefix: "checkpoints/"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(200 << 20)
	b.ResetTimer()
	var frozen time.Duration
	var written, used int64
	for i := 0; i < b.N; i++ {
		_, snap, err := s.CreateStats(context.Background(), "c", Volume{ID: "v", Path: src, Freezer: &freezer{}})
		if err != nil {
			b.Fatal(err)
		}
		frozen += snap.Frozen
		written, used = snap.Written, snap.Data
		b.StopTimer()
		s.Delete(context.Background(), "c")
		b.StartTimer()
	}
	b.ReportMetric(float64(frozen.Milliseconds())/float64(b.N), "frozen-ms/op")
	b.ReportMetric(float64(written)/float64(used), "written/used")
}
