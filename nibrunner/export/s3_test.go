package export

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/jobs"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// s3Store starts versitygw and opens s3://exports/host-1 on it, in parts of
// S3's smallest size so that a few MiB already make a multipart upload.
func s3Store(t *testing.T) (*s3test.Server, *store.S3) {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "exports")
	st, err := store.NewS3(context.Background(), "s3://exports/host-1")
	if err != nil {
		t.Fatal(err)
	}
	st.SetPartSize(5 << 20)
	return srv, st
}

// randomVolume makes an ext4 volume whose root/ holds one file of n random
// bytes (incompressible, so the archive is as large).
func randomVolume(t *testing.T, dir string, n int) string {
	t.Helper()
	tree := filepath.Join(dir, "tree")
	root := filepath.Join(tree, guest.VolumeUpperDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(filepath.Join(root, "blob"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(dir, "vol.ext4")
	mkfs(t, tree, img, int64(n)*2+32<<20)
	return img
}

func incomplete(t *testing.T, srv *s3test.Server) int {
	t.Helper()
	n := 0
	for u := range srv.Client.ListIncompleteUploads(context.Background(), "exports", "", true) {
		if u.Err != nil {
			t.Fatal(u.Err)
		}
		n++
	}
	return n
}

func TestAnExportStreamsToS3AsAMultipartUploadOfPartsOfAtLeast5MiB(t *testing.T) {
	needs(t)
	srv, objects := s3Store(t)
	dir := t.TempDir()
	img := randomVolume(t, dir, 12<<20)
	w := newWriter(t, dir, objects)
	info, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e1", ObjectKey: "apps/a.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
	if err != nil {
		t.Fatal(err)
	}
	st, err := srv.Client.StatObject(context.Background(), "exports", "host-1/apps/a.tar.gz", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A multipart object's ETag ends in -<parts>.
	if !strings.HasSuffix(st.ETag, "-3") || uint64(st.Size) != info.SizeBytes || st.Size < 12<<20 {
		t.Errorf("object ETag %s, %d bytes (reported %d); want 3 parts of 5 MiB holding the 12 MiB", st.ETag, st.Size, info.SizeBytes)
	}
	if n := incomplete(t, srv); n != 0 {
		t.Errorf("%d incomplete uploads left", n)
	}
}

func TestAnExportWhileS3GoesDownFailsNamingTheStoreLeavesNothingAtTheKeyAndIsRetriedUntilItIsBack(t *testing.T) {
	needs(t)
	srv, objects := s3Store(t)
	dir := t.TempDir()
	img := randomVolume(t, dir, 40<<20)
	w := newWriter(t, dir, objects)
	e := desired.DesiredExport{ExportId: "e1", ObjectKey: "apps/a.tar.gz"}
	ends := make(chan jobs.Status, 16)
	r := jobs.New(jobs.Options{
		Retry: backoff.Policy{Initial: 200 * time.Millisecond, Max: time.Second, Factor: 2},
		OnEnd: func(_ string, st jobs.Status) { ends <- st },
	})
	defer r.Close()
	r.Submit("e1", func(ctx context.Context) error {
		_, err := w.Write(ctx, e, checkpoint.Volume{ID: "v", Path: img})
		return err
	})
	// S3 goes down once the upload has begun.
	deadline := time.Now().Add(time.Minute)
	for incomplete(t, srv) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no upload began within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.Down()
	var failed jobs.Status
	select {
	case failed = <-ends:
	case <-time.After(time.Minute):
		t.Fatal("the export did not end with S3 down")
	}
	if failed.State != jobs.Failed || !strings.Contains(failed.Message, "s3://exports/host-1") {
		t.Errorf("with S3 down the export ended %+v; want failed naming the store", failed)
	}
	srv.Up(t)
	for {
		st := <-ends
		if st.State == jobs.Ready {
			break
		}
		t.Logf("retry %d: %s", st.Attempts, st.Message)
		if st.Attempts > 20 {
			t.Fatalf("still failing after S3 came back: %s", st.Message)
		}
	}
	obj, err := srv.Client.GetObject(context.Background(), "exports", "host-1/apps/a.tar.gz", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	got := readArchive(t, obj)
	blob, _ := os.ReadFile(filepath.Join(dir, "tree", guest.VolumeUpperDir, "blob"))
	sum := sha256.Sum256(blob)
	if got["data/blob"].sha != hex.EncodeToString(sum[:]) {
		t.Error("the object written once S3 was back does not hold the volume")
	}
	if n := incomplete(t, srv); n != 0 {
		t.Errorf("%d incomplete uploads are left under the key after the retry", n)
	}
}

func TestNothingIsVisibleAtTheKeyWhileAnExportIsUploadedOrAfterItFailed(t *testing.T) {
	needs(t)
	srv, objects := s3Store(t)
	dir := t.TempDir()
	img := randomVolume(t, dir, 20<<20)
	w := newWriter(t, dir, objects)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.Write(ctx, desired.DesiredExport{ExportId: "e1", ObjectKey: "a.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
		done <- err
	}()
	for incomplete(t, srv) == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := srv.Client.StatObject(context.Background(), "exports", "host-1/a.tar.gz", minio.StatObjectOptions{}); err == nil {
		t.Error("an object is visible at the key while its upload is in flight")
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled export succeeded")
	}
	if _, err := srv.Client.StatObject(context.Background(), "exports", "host-1/a.tar.gz", minio.StatObjectOptions{}); err == nil {
		t.Error("an object is visible at the key after its upload was cancelled")
	}
	if n := incomplete(t, srv); n != 0 {
		t.Errorf("the cancelled upload was not aborted: %d incomplete", n)
	}
}

// bigTree lays out 10,000 small files in 100 folders, of varied modes,
// and one 1 GiB sparse file holding 20 MiB in 5 runs.
func bigTree(t *testing.T, dir string) string {
	t.Helper()
	tree := filepath.Join(dir, "tree")
	root := filepath.Join(tree, guest.VolumeUpperDir)
	for d := range 100 {
		sub := filepath.Join(root, "files", fmt.Sprintf("d%02d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for f := range 100 {
			mode := []fs.FileMode{0o644, 0o600, 0o755, 0o640}[f%4]
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), fmt.Appendf(nil, "file %d/%d\n", d, f), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	testenv.SparseFile(t, filepath.Join(root, "sparse.bin"), 1<<30, 4<<20, 0, 200<<20, 400<<20, 600<<20, 800<<20)
	return tree
}

// hashes maps every path under root to its mode and sha256.
func hashes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		info, _ := d.Info()
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			v += " " + hash(t, p)
		}
		out[rel] = v
		return nil
	})
	return out
}

func TestAVolumeOf10000FilesAndA1GiBSparseFileRoundTripsThroughAnExportWhileItsCopyWritesOnlyTheData(t *testing.T) {
	needs(t)
	if testing.Short() {
		t.Skip("writes a 1 GiB sparse file and reads it back")
	}
	srv, objects := s3Store(t)
	objects.SetPartSize(16 << 20)
	dir := t.TempDir()
	tree := bigTree(t, dir)
	img := filepath.Join(dir, "vol.ext4")
	mkfs(t, tree, img, 2<<30)

	// The copy an export reads from writes what the volume holds, not its size.
	snap, err := checkpoint.Snapshot(context.Background(), checkpoint.Volume{ID: "v", Path: img}, filepath.Join(dir, "copy"), 0)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "copy"))
	t.Logf("the copy of the %d-byte volume wrote %d bytes (data %d)", snap.Size, snap.Written, snap.Data)
	if snap.Data > 128<<20 {
		t.Errorf("the copy of a volume holding 20 MiB and 10,000 small files wrote %d bytes", snap.Data)
	}

	w := newWriter(t, dir, objects)
	start := time.Now()
	info, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "big", ObjectKey: "big.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exported in %s: %d bytes", time.Since(start), info.SizeBytes)

	obj, err := srv.Client.GetObject(context.Background(), "exports", "host-1/big.tar.gz", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	gz, err := gzip.NewReader(obj)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rel, ok := strings.CutPrefix(strings.TrimSuffix(h.Name, "/"), "data")
		if !ok || h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		rel = strings.TrimPrefix(rel, "/")
		if rel == "" {
			rel = "."
		}
		v := h.FileInfo().Mode().String()
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			io.Copy(s, tr)
			v += " " + hex.EncodeToString(s.Sum(nil))
		}
		got[rel] = v
	}
	want := hashes(t, filepath.Join(tree, guest.VolumeUpperDir))
	if len(got) != len(want) {
		t.Errorf("the archive holds %d entries, the volume %d", len(got), len(want))
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: archive %q, volume %q", p, got[p], v)
		}
	}
}
