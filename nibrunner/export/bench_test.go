package export

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
	"alpnib.dev/nibrunner/volume"
)

// BenchmarkExportToS3 writes an export of a volume holding 128 MiB (32
// files of random bytes, which gzip cannot shrink, plus 2,000 small text
// files) to versitygw on loopback, in 16 MiB parts: a copy of the volume,
// a read-only mount, tar, gzip, multipart upload. MB/s is of the files'
// bytes.
func BenchmarkExportToS3(b *testing.B) {
	_, objects := benchStore(b)
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

// benchStore starts versitygw and opens s3://exports/bench on it, once
// root and the tools an export needs are there.
func benchStore(b *testing.B) (*s3test.Server, *store.S3) {
	testenv.RequireRoot(b)
	testenv.RequireCommand(b, "mke2fs", "losetup", "mount")
	srv := s3test.Start(b)
	srv.SetEnv(b)
	srv.Bucket(b, "exports")
	objects, err := store.NewS3(context.Background(), "s3://exports/bench")
	if err != nil {
		b.Fatal(err)
	}
	return srv, objects
}

// This file can be copied into a checkout from before sparse entries and
// run there, with internal/testenv/sparse.go (docs/bench.md compares the
// two).

// sparseBenchVolume makes a 256 MiB ext4 volume whose root/ holds one
// 1 GiB file with 20 MiB of random data in 5 runs of 4 MiB, and opens the
// exports store on versitygw.
func sparseBenchVolume(b *testing.B) (string, *store.S3, *s3test.Server) {
	srv, objects := benchStore(b)
	dir := b.TempDir()
	root := filepath.Join(dir, "tree", guest.VolumeUpperDir)
	os.MkdirAll(root, 0o755)
	testenv.SparseFile(b, filepath.Join(root, "sparse.bin"), 1<<30, 4<<20, 0, 200<<20, 400<<20, 600<<20, 800<<20)
	img := filepath.Join(dir, "vol.ext4")
	mkfs(b, filepath.Join(dir, "tree"), img, 256<<20)
	return img, objects, srv
}

// BenchmarkExportOfA1GiBSparseFile exports a volume holding a 1 GiB file
// with 20 MiB of data to versitygw: object-MiB is what was uploaded,
// tar-MiB the tar that gzip compressed.
func BenchmarkExportOfA1GiBSparseFile(b *testing.B) {
	img, objects, srv := sparseBenchVolume(b)
	w := newWriter(b, b.TempDir(), objects)
	var size uint64
	for b.Loop() {
		info, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e", ObjectKey: "e.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
		if err != nil {
			b.Fatal(err)
		}
		size = info.SizeBytes
	}
	b.StopTimer()
	obj, err := srv.Client.GetObject(context.Background(), "exports", "bench/e.tar.gz", minio.GetObjectOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer obj.Close()
	gz, err := gzip.NewReader(obj)
	if err != nil {
		b.Fatal(err)
	}
	tarSize, err := io.Copy(io.Discard, gz)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(size)/(1<<20), "object-MiB")
	b.ReportMetric(float64(tarSize)/(1<<20), "tar-MiB")
}

// BenchmarkRestoreOfA1GiBSparseFile unpacks that export into a folder, as
// a volume's initialContents is: allocated-MiB is the disk the restored
// file takes.
func BenchmarkRestoreOfA1GiBSparseFile(b *testing.B) {
	img, objects, srv := sparseBenchVolume(b)
	dir := b.TempDir()
	w := newWriter(b, dir, objects)
	if _, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e", ObjectKey: "e.tar.gz"}, checkpoint.Volume{ID: "v", Path: img}); err != nil {
		b.Fatal(err)
	}
	archive := filepath.Join(dir, "e.tar.gz")
	if err := srv.Client.FGetObject(context.Background(), "exports", "bench/e.tar.gz", archive, minio.GetObjectOptions{}); err != nil {
		b.Fatal(err)
	}
	var used int64
	for i := 0; b.Loop(); i++ {
		dest := filepath.Join(dir, fmt.Sprint("restored-", i))
		os.Mkdir(dest, 0o755)
		if _, err := volume.Unpack(context.Background(), archive, dest, volume.UnpackOptions{UID: guest.TenantUID, GID: guest.TenantGID}); err != nil {
			b.Fatal(err)
		}
		used = testenv.Allocated(b, filepath.Join(dest, "sparse.bin"))
		os.RemoveAll(dest)
	}
	b.ReportMetric(float64(used)/(1<<20), "allocated-MiB")
}
