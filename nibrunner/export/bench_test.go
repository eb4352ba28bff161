package export

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// BenchmarkExportToS3 writes an export of a volume holding 128 MiB (32
// files of random bytes, which gzip cannot shrink, plus 2,000 small text
// files) to versitygw on loopback, in 16 MiB parts: a copy of the volume,
// a read-only mount, tar, gzip, multipart upload. MB/s is of the files'
// bytes.
func BenchmarkExportToS3(b *testing.B) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "mke2fs", "losetup", "mount")
	srv := s3test.Start(b)
	srv.SetEnv(b)
	srv.Bucket(b, "exports")
	objects, err := store.NewS3(context.Background(), "s3://exports/bench")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	root := filepath.Join(dir, "tree", guest.VolumeUpperDir)
	os.MkdirAll(filepath.Join(root, "blobs"), 0o755)
	os.MkdirAll(filepath.Join(root, "notes"), 0o755)
	buf := make([]byte, 4<<20)
	var total int64
	for i := range 32 {
		rand.Read(buf)
		os.WriteFile(filepath.Join(root, "blobs", fmt.Sprint(i)), buf, 0o644)
		total += int64(len(buf))
	}
	for i := range 2000 {
		body := fmt.Appendf(nil, "note %d: the quick brown fox jumps over the lazy dog\n", i)
		os.WriteFile(filepath.Join(root, "notes", fmt.Sprint(i)), body, 0o644)
		total += int64(len(body))
	}
	img := filepath.Join(dir, "vol.ext4")
	mkfs(b, filepath.Join(dir, "tree"), img, 512<<20)
	w := newWriter(b, dir, objects)
	b.SetBytes(total)
	b.ResetTimer()
	var size uint64
	for i := 0; i < b.N; i++ {
		info, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e", ObjectKey: "e.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
		if err != nil {
			b.Fatal(err)
		}
		size = info.SizeBytes
	}
	b.ReportMetric(float64(size)/(1<<20), "object-MiB")
}
