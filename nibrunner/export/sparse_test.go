package export

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/volume"
)

// tarOfDir writes the export tar of dir (no environment) into a file and
// returns its path.
func tarOfDir(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "export.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteTar(context.Background(), f, dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAFileWithHolesIsArchivedAsItsDataAndReadsBackWholeInGosTarReader(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "d", "sparse.bin")
	// Data at the start, in the middle (off a block boundary) and up to
	// the end, which is not on a block boundary either.
	testenv.SparseFile(t, p, 64<<20+100, 1<<20, 0, 20<<20+4096, 64<<20+100-(1<<20))
	if testenv.Allocated(t, p) > 4<<20 {
		t.Skipf("the test's filesystem keeps no holes (%d bytes allocated)", testenv.Allocated(t, p))
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)
	os.Chtimes(p, mtime, mtime)
	os.Chmod(p, 0o640)
	archive := tarOfDir(t, dir)
	st, _ := os.Stat(archive)
	if st.Size() > 4<<20 {
		t.Errorf("the tar of a 64 MiB file holding 3 MiB is %d bytes", st.Size())
	}
	f, _ := os.Open(archive)
	defer f.Close()
	tr := tar.NewReader(f)
	want, _ := os.ReadFile(p)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "data/d/sparse.bin" {
			continue
		}
		found = true
		got, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Size != int64(len(want)) || !bytes.Equal(got, want) {
			t.Errorf("the entry reads back %d bytes (header %d), want the file's %d", len(got), h.Size, len(want))
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o640 || !h.ModTime.Equal(mtime) || h.Uid != os.Getuid() {
			t.Errorf("the entry's header is %+v; want a regular file, mode 0640, mtime %v, uid %d", h, mtime, os.Getuid())
		}
	}
	if !found {
		t.Fatal("the archive holds no data/d/sparse.bin")
	}
}

func TestGNUTarListsAndExtractsTheSparseEntriesWeWrite(t *testing.T) {
	gnutar := testenv.RequireCommand(t, "tar")
	dir := t.TempDir()
	testenv.SparseFile(t, filepath.Join(dir, "sparse.bin"), 256<<20, 2<<20, 4096, 100<<20)
	testenv.SparseFile(t, filepath.Join(dir, "hole.bin"), 32<<20, 0)
	testenv.SparseFile(t, filepath.Join(dir, "dense.bin"), 3<<20+7, 3<<20+7, 0)
	long := filepath.Join(dir, strings.Repeat("n", 90), strings.Repeat("m", 90))
	os.MkdirAll(long, 0o755)
	testenv.SparseFile(t, filepath.Join(long, "tail.bin"), 8<<20, 4096, 8<<20-4096)
	if testenv.Allocated(t, filepath.Join(dir, "hole.bin")) != 0 {
		t.Skip("the test's filesystem keeps no holes")
	}
	archive := tarOfDir(t, dir)
	out, err := exec.Command(gnutar, "-tvf", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -tvf: %v: %s", err, out)
	}
	listed := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 6 {
			t.Fatalf("tar -tv printed %q", line)
		}
		n, _ := strconv.ParseInt(fields[2], 10, 64)
		listed[fields[len(fields)-1]] = n
	}
	rel := "data/" + strings.TrimPrefix(filepath.Join(long, "tail.bin"), dir+"/")
	for name, size := range map[string]int64{"data/sparse.bin": 256 << 20, "data/hole.bin": 32 << 20, "data/dense.bin": 3<<20 + 7, rel: 8 << 20} {
		if listed[name] != size {
			t.Errorf("GNU tar lists %s as %d bytes, want %d (listing:\n%s)", name, listed[name], size, out)
		}
	}
	if strings.Contains(string(out), "GNUSparseFile") {
		t.Errorf("GNU tar lists the stand-in names of sparse entries:\n%s", out)
	}
	x := t.TempDir()
	if out, err := exec.Command(gnutar, "-xf", archive, "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar -xf: %v: %s", err, out)
	}
	for _, name := range []string{"sparse.bin", "hole.bin", "dense.bin", strings.TrimPrefix(filepath.Join(long, "tail.bin"), dir+"/")} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, err := os.ReadFile(filepath.Join(x, "data", name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("GNU tar extracted %s as %d bytes (%v), not the %d bytes archived", name, len(b), err, len(a))
		}
	}
	if got := testenv.Allocated(t, filepath.Join(x, "data", "sparse.bin")); got > 8<<20 {
		t.Errorf("GNU tar extracted the 256 MiB file holding 4 MiB into %d allocated bytes", got)
	}
}

func TestASparseMapWidensRunsToBlocksMergesThemAndMarksATrailingHole(t *testing.T) {
	for _, tc := range []struct {
		name string
		runs []extent
		size int64
		want []extent
	}{
		{"no hole", []extent{{0, 1000}}, 1000, nil},
		{"all hole", nil, 5000, []extent{{5000, 0}}},
		{"trailing hole", []extent{{0, 4096}}, 10000, []extent{{0, 4096}, {10000, 0}}},
		{"unaligned runs widen and meet", []extent{{100, 10}, {600, 10}, {2000, 1}}, 4000, []extent{{0, 1024}, {1536, 512}, {4000, 0}}},
		{"the last run ends at the size", []extent{{8192, 1808}}, 10000, []extent{{8192, 1808}}},
	} {
		got := sparseMap(tc.runs, tc.size)
		if len(got) != len(tc.want) || (len(got) > 0 && !equalExtents(got, tc.want)) {
			t.Errorf("%s: sparseMap(%v, %d) = %v, want %v", tc.name, tc.runs, tc.size, got, tc.want)
		}
	}
	var many []extent
	for i := range int64(3 * maxRuns) {
		many = append(many, extent{i * 8192, 512})
	}
	if m := sparseMap(many, 3*maxRuns*8192); len(m) > maxRuns+1 {
		t.Errorf("a file of %d runs is mapped in %d runs, more than %d", len(many), len(m), maxRuns)
	}
}

func equalExtents(a, b []extent) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestASparseEntryKeepsOwnersAndTimesAUstarHeaderCannotHold(t *testing.T) {
	for _, mtime := range []time.Time{time.Unix(-2, 750_000_000), time.Unix(-1, 250_000_000), time.Unix(1<<34, 5), time.Unix(1700000000, 0)} {
		h := &tar.Header{Name: "data/x", Mode: 0o4755, Uid: 1 << 22, Gid: 3 << 21, Size: 1 << 20, ModTime: mtime}
		m := []extent{{0, 512}, {1 << 20, 0}}
		mapBlock := encodeMap(m)
		hdrs, err := sparseHeaders(h, int64(len(mapBlock))+512)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		buf.Write(hdrs)
		buf.Write(mapBlock)
		buf.Write(bytes.Repeat([]byte{7}, 512))
		buf.Write(make([]byte, 1024))
		tr := tar.NewReader(&buf)
		got, err := tr.Next()
		if err != nil {
			t.Fatalf("mtime %v: %v", mtime, err)
		}
		body, _ := io.ReadAll(tr)
		if got.Name != "data/x" || got.Size != 1<<20 || len(body) != 1<<20 || got.Uid != h.Uid || got.Gid != h.Gid || got.Mode != 0o4755 || !got.ModTime.Equal(mtime) {
			t.Errorf("read back %+v (%d bytes); want %+v", got, len(body), h)
		}
	}
}

// sparseVolume makes an ext4 volume whose root/ holds sparse.bin (1 GiB
// holding 20 MiB in 5 runs of 4 MiB), dense.bin (3 MiB of random bytes)
// and hole.bin (64 MiB, all hole), and returns the image and root/.
func sparseVolume(t *testing.T, dir string) (img, root string) {
	t.Helper()
	tree := filepath.Join(dir, "tree")
	root = filepath.Join(tree, guest.VolumeUpperDir)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.SparseFile(t, filepath.Join(root, "sparse.bin"), 1<<30, 4<<20, 0, 200<<20, 400<<20+4096, 600<<20, 1<<30-4<<20)
	testenv.SparseFile(t, filepath.Join(root, "dense.bin"), 3<<20, 3<<20, 0)
	testenv.SparseFile(t, filepath.Join(root, "hole.bin"), 64<<20, 0)
	os.Chmod(filepath.Join(root, "sparse.bin"), 0o640)
	os.Chmod(filepath.Join(root, "hole.bin"), 0o600)
	img = filepath.Join(dir, "vol.ext4")
	mkfs(t, tree, img, 256<<20)
	return img, root
}

func TestA1GiBSparseFileHolding20MiBRoundTripsThroughAnExportAsItsDataAndGNUTarReadsTheArchive(t *testing.T) {
	needs(t)
	gnutar := testenv.RequireCommand(t, "tar")
	srv, objects := s3Store(t)
	dir := t.TempDir()
	img, root := sparseVolume(t, dir)
	w := newWriter(t, dir, objects)
	if _, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e1", ObjectKey: "sparse.tar.gz"}, checkpoint.Volume{ID: "v", Path: img}); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "sparse.tar.gz")
	if err := srv.Client.FGetObject(context.Background(), "exports", "host-1/sparse.tar.gz", archive, minio.GetObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	// The tar holds the data, not the holes.
	f, _ := os.Open(archive)
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	size, err := io.Copy(io.Discard, gz)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the tar of 1 GiB + 64 MiB + 3 MiB holding 23 MiB is %d bytes", size)
	if size < 23<<20 || size > 24<<20 {
		t.Errorf("the uncompressed tar is %d bytes; want about the 23 MiB of data", size)
	}

	// Restored into a volume sized for the data, the files come back the
	// same, holes and all.
	dest := filepath.Join(dir, "restored")
	os.Mkdir(dest, 0o755)
	if _, err := volume.Unpack(context.Background(), archive, dest, volume.UnpackOptions{UID: guest.TenantUID, GID: guest.TenantGID, Limit: 64 << 20}); err != nil {
		t.Fatalf("restore into a volume of 64 MiB: %v", err)
	}
	same(t, root, dest)
	if a := testenv.Allocated(t, filepath.Join(dest, "sparse.bin")); a < 20<<20 || a > 21<<20 {
		t.Errorf("the restored sparse.bin takes %d bytes on disk; want about its 20 MiB of data", a)
	}
	if a := testenv.Allocated(t, filepath.Join(dest, "hole.bin")); a != 0 {
		t.Errorf("the restored hole.bin takes %d bytes on disk; want none", a)
	}

	// GNU tar lists the real sizes and extracts the same bytes.
	out, err := exec.Command(gnutar, "-tvzf", archive, "data/sparse.bin", "data/hole.bin").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " 1073741824 ") || !strings.Contains(string(out), " 67108864 ") {
		t.Errorf("tar -tvzf lists (%v):\n%s\nwant sparse.bin of 1073741824 bytes and hole.bin of 67108864", err, out)
	}
	x := filepath.Join(dir, "gnu")
	os.Mkdir(x, 0o755)
	if out, err := exec.Command(gnutar, "-xzf", archive, "-C", x).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v: %s", err, out)
	}
	same(t, root, filepath.Join(x, DataDir))
}

func TestAnExportOfA1GiBSparseFileHolding20MiBSeedsAVolumeOf64MiBOnAnotherHost(t *testing.T) {
	needs(t)
	_, objects := s3Store(t)
	dir := t.TempDir()
	img, root := sparseVolume(t, dir)
	w := newWriter(t, dir, objects)
	if _, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e1", ObjectKey: "sparse.tar.gz"}, checkpoint.Volume{ID: "v", Path: img}); err != nil {
		t.Fatal(err)
	}
	r, _, err := objects.Get(context.Background(), "sparse.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	io.Copy(sum, r)
	r.Close()

	// The other host seeds a new volume from the object, as a document's
	// initialContents asks: unpacked, then formatted into the image.
	other := &volume.Local{Dir: filepath.Join(dir, "other"), Store: objects}
	os.Mkdir(other.Dir, 0o755)
	v, err := other.Converge(context.Background(), volume.Spec{VolumeID: "restored", SizeBytes: 64 << 20, State: volume.Present,
		InitialContents: &volume.Contents{ObjectKey: "sparse.tar.gz", Digest: hex.EncodeToString(sum.Sum(nil)), DestinationPath: "/"}})
	if err != nil {
		t.Fatalf("seed a 64 MiB volume from the export: %v", err)
	}
	if a := testenv.Allocated(t, v.Path); a > 40<<20 {
		t.Errorf("the restored 64 MiB volume takes %d bytes on the host", a)
	}
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	out, err := exec.Command("mount", "-o", "ro,loop", v.Path, mnt).CombinedOutput()
	if err != nil {
		t.Fatalf("mount the restored volume: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	same(t, root, filepath.Join(mnt, guest.VolumeUpperDir))
	if a := testenv.Allocated(t, filepath.Join(mnt, guest.VolumeUpperDir, "sparse.bin")); a > 21<<20 {
		t.Errorf("sparse.bin takes %d bytes in the restored volume; want about its 20 MiB", a)
	}
}
