package volume_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/volume"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

type fixture struct {
	store *store.Dir
	local *volume.Local
}

func newFixture(t *testing.T) *fixture {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs", "resize2fs", "e2fsck", "debugfs")
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, err := volume.NewLocal(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: st, local: l}
}

func (f *fixture) put(t *testing.T, key string, b []byte) *volume.Contents {
	t.Helper()
	if err := f.store.Put(ctx(t), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return &volume.Contents{Digest: hex.EncodeToString(sum[:]), ObjectKey: key, DestinationPath: "/srv/site"}
}

func siteTarGz(t *testing.T) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range []struct {
		name, body string
		mode       int64
	}{{"index.html", "<h1>hello</h1>", 0o644}, {"bin/serve", "#!/bin/sh", 0o4755}, {".DS_Store", "junk", 0o644}} {
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Mode: e.mode, Size: int64(len(e.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// debugfs runs one debugfs request against a volume file, read-only.
func debugfs(t *testing.T, img, request string) string {
	t.Helper()
	out, err := exec.Command(testenv.RequireCommand(t, "debugfs"), "-R", request, img).Output()
	if err != nil {
		t.Fatalf("debugfs %s: %v", request, err)
	}
	return string(out)
}

var statLine = regexp.MustCompile(`Mode:\s+(\d+)[\s\S]*User:\s+(\d+)\s+Group:\s+(\d+)`)

// inode returns the permission bits and owner debugfs reports for p.
func inode(t *testing.T, img, p string) (mode uint64, uid, gid int) {
	t.Helper()
	m := statLine.FindStringSubmatch(debugfs(t, img, "stat "+p))
	if m == nil {
		t.Fatalf("%s is not in the volume", p)
	}
	mode, _ = strconv.ParseUint(m[1], 8, 32)
	uid, _ = strconv.Atoi(m[2])
	gid, _ = strconv.Atoi(m[3])
	return mode, uid, gid
}

func TestANewVolumeIsASparseExt4FileOfTheSizeRoundedUpTo512Bytes(t *testing.T) {
	f := newFixture(t)
	v, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "data-1", SizeBytes: 64<<20 + 1, State: volume.Present})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(v.Path)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Created || v.SizeBytes != 64<<20+512 || st.Size() != 64<<20+512 {
		t.Fatalf("volume = %+v, file %d bytes; want a new %d-byte volume", v, st.Size(), 64<<20+512)
	}
	if onDisk := st.Sys().(*syscall.Stat_t).Blocks * 512; onDisk >= st.Size()/2 {
		t.Fatalf("the file takes %d bytes on disk for a %d-byte volume; it is not sparse", onDisk, st.Size())
	}
	if _, uid, _ := inode(t, v.Path, "/"); uid != 0 {
		t.Fatalf("the filesystem root is owned by %d; want root", uid)
	}
	if _, err := volume.ReadUsage(strings.NewReader("")); err == nil {
		t.Fatal("ReadUsage accepted nothing")
	}
}

func TestAVolumeSeededFromATarGzHoldsItUnderTheUpperDirOwnedByTheTenant(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	v, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "web", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c})
	if err != nil {
		t.Fatal(err)
	}
	if v.Seeded == nil || v.Seeded.Files != 2 || v.Seeded.Skipped != 1 {
		t.Fatalf("seeded = %+v; want 2 files and the .DS_Store skipped", v.Seeded)
	}
	if got := debugfs(t, v.Path, "cat /root/srv/site/index.html"); got != "<h1>hello</h1>" {
		t.Fatalf("index.html holds %q", got)
	}
	for p, wantMode := range map[string]uint64{"/root/srv/site": 0o755, "/root/srv/site/index.html": 0o644, "/root/srv/site/bin/serve": 0o755} {
		mode, uid, gid := inode(t, v.Path, p)
		if mode != wantMode || uid != 65534 || gid != 65534 {
			t.Errorf("%s: mode %o owner %d:%d; want %o 65534:65534", p, mode, uid, gid, wantMode)
		}
	}
	for _, p := range []string{"/root", "/root/srv"} {
		if mode, uid, _ := inode(t, v.Path, p); uid != 0 || mode != 0o755 {
			t.Errorf("%s: mode %o owner %d; want 755 root", p, mode, uid)
		}
	}
	if strings.Contains(debugfs(t, v.Path, "ls /root/srv/site"), ".DS_Store") {
		t.Error(".DS_Store was unpacked")
	}
}

func TestAZipWithASymlinkFailsTheVolumeByNameAndMakesNoFile(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "current"}
	h.SetMode(os.ModeSymlink | 0o777)
	w, _ := zw.CreateHeader(h)
	_, _ = w.Write([]byte("/etc/shadow"))
	_ = zw.Close()
	c := f.put(t, "seeds/evil.zip", buf.Bytes())
	_, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "evil", SizeBytes: 8 << 20, State: volume.Present, InitialContents: c})
	var ve *volume.Error
	if !errors.As(err, &ve) || ve.VolumeID != "evil" || !strings.HasPrefix(err.Error(), `volume evil: initialContents "seeds/evil.zip": entry "current" is a symlink`) {
		t.Fatalf("error = %v", err)
	}
	if _, err := os.Stat(f.local.Path("evil")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a volume file exists after the failure: %v", err)
	}
	if entries, _ := os.ReadDir(f.local.Dir); len(entries) != 0 {
		t.Fatalf("the volume folder holds %v", entries)
	}
}

func TestAnInitialContentsDigestMismatchFailsTheVolume(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	c.Digest = strings.Repeat("0", 64)
	_, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "web", SizeBytes: 8 << 20, State: volume.Present, InitialContents: c})
	if err == nil || !strings.Contains(err.Error(), "volume web: initialContents: digest mismatch") {
		t.Fatalf("error = %v", err)
	}
}

func TestAnArchiveThatDoesNotFitFailsTheVolume(t *testing.T) {
	f := newFixture(t)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"a", "b", "c"} {
		_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: 900 << 10, Typeflag: tar.TypeReg})
		_, _ = tw.Write(bytes.Repeat([]byte{1}, 900<<10))
	}
	_ = tw.Close()
	c := f.put(t, "seeds/big.tar", buf.Bytes())
	// 3 MiB: the entries' 2.7 MiB pass the early count, and mke2fs finds
	// that ext4's own structures leave too little room for them.
	for _, size := range []uint64{2 << 20, 3 << 20} {
		_, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "big", SizeBytes: size, State: volume.Present, InitialContents: c})
		if !errors.Is(err, volume.ErrDoesNotFit) || !strings.HasPrefix(err.Error(), "volume big: initialContents") {
			t.Fatalf("%d bytes: error = %v; want the volume to fail as not fitting", size, err)
		}
	}
}

func TestAVolumeGrowsKeepingItsDataAndIsNeverShrunk(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	spec := volume.Spec{VolumeID: "grow", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c}
	if _, err := f.local.Converge(ctx(t), spec); err != nil {
		t.Fatal(err)
	}
	before, err := f.local.Usage(ctx(t), "grow")
	if err != nil {
		t.Fatal(err)
	}
	spec.SizeBytes = 48 << 20
	v, err := f.local.Converge(ctx(t), spec)
	if err != nil || !v.Grown || v.SizeBytes != 48<<20 {
		t.Fatalf("grow = %+v, %v", v, err)
	}
	after, err := f.local.Usage(ctx(t), "grow")
	if err != nil {
		t.Fatal(err)
	}
	if after.TotalBytes <= before.TotalBytes || after.TotalBytes > 48<<20 {
		t.Fatalf("filesystem total went from %d to %d for a 48 MiB file", before.TotalBytes, after.TotalBytes)
	}
	if got := debugfs(t, v.Path, "cat /root/srv/site/index.html"); got != "<h1>hello</h1>" {
		t.Fatalf("after growing, index.html holds %q", got)
	}
	spec.SizeBytes = 32 << 20
	_, err = f.local.Converge(ctx(t), spec)
	if !errors.Is(err, volume.ErrShrink) || !strings.Contains(err.Error(), "volume grow: a volume only grows: it is 50331648 bytes and the document asks for 33554432") {
		t.Fatalf("shrink error = %v", err)
	}
	if st, _ := os.Stat(v.Path); st.Size() != 48<<20 {
		t.Fatalf("after a refused shrink the file is %d bytes", st.Size())
	}
}

func TestAPresentVolumeIsNeverReformattedOrReseeded(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	spec := volume.Spec{VolumeID: "keep", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c}
	if _, err := f.local.Converge(ctx(t), spec); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(f.local.Path("keep"))
	spec.InitialContents = f.put(t, "seeds/other.tar.gz", []byte("not even an archive"))
	v, err := f.local.Converge(ctx(t), spec)
	if err != nil || v.Created || v.Grown || v.Seeded != nil {
		t.Fatalf("second converge = %+v, %v; want nothing done", v, err)
	}
	if st2, _ := os.Stat(v.Path); !st2.ModTime().Equal(st1.ModTime()) {
		t.Fatal("the volume file was rewritten")
	}
}

func TestOnlyAnExplicitAbsentDeletesAVolume(t *testing.T) {
	f := newFixture(t)
	if _, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "gone", SizeBytes: 8 << 20, State: volume.Present}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "gone", SizeBytes: 8 << 20}); err == nil {
		t.Fatal("a spec with no desiredState was accepted")
	}
	if _, err := os.Stat(f.local.Path("gone")); err != nil {
		t.Fatalf("the volume vanished without an absent: %v", err)
	}
	if vols, err := f.local.List(ctx(t)); err != nil || len(vols) != 1 || vols["gone"].Path != f.local.Path("gone") || vols["gone"].SizeBytes != 8<<20 {
		t.Fatalf("List = %v, %v; want gone, 8 MiB", vols, err)
	}
	v, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "gone", State: volume.Absent})
	if err != nil || !v.Deleted {
		t.Fatalf("absent = %+v, %v", v, err)
	}
	if vols, _ := f.local.List(ctx(t)); len(vols) != 0 {
		t.Fatalf("List after absent = %v", vols)
	}
	if _, err := os.Stat(f.local.Path("gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the volume file is still there: %v", err)
	}
}

func TestUsageReadFromTheSuperblockMatchesDumpe2fs(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	if _, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "u", SizeBytes: 40 << 20, State: volume.Present, InitialContents: c}); err != nil {
		t.Fatal(err)
	}
	u, err := f.local.Usage(ctx(t), "u")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(testenv.RequireCommand(t, "dumpe2fs"), "-h", f.local.Path("u")).Output()
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string) uint64 {
		m := regexp.MustCompile(`(?m)^` + name + `:\s+(\d+)`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("dumpe2fs has no %s", name)
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	bs := field("Block size")
	if want := field("Block count") * bs; u.TotalBytes != want {
		t.Errorf("total = %d, dumpe2fs says %d", u.TotalBytes, want)
	}
	if want := (field("Block count") - field("Free blocks")) * bs; u.UsedBytes != want {
		t.Errorf("used = %d, dumpe2fs says %d", u.UsedBytes, want)
	}
	if u.MeasuredAt.IsZero() || u.UsedBytes == 0 || u.UsedBytes >= u.TotalBytes {
		t.Errorf("usage = %+v", u)
	}
}

func TestASizeTooSmallForExt4FailsTheVolumeSaying(t *testing.T) {
	f := newFixture(t)
	_, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "tiny", SizeBytes: 4096, State: volume.Present})
	if err == nil || err.Error() != "volume tiny: sizeBytes 4096 is too small to hold an ext4 filesystem; ask for a few MiB at least" {
		t.Fatalf("error = %v", err)
	}
}

func TestConcurrentConvergesOfOneVolumeMakeItOnce(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	spec := volume.Spec{VolumeID: "race", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c}
	results := make(chan volume.Volume, 4)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			v, err := f.local.Converge(ctx(t), spec)
			results <- v
			errs <- err
		}()
	}
	created := 0
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if (<-results).Created {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d converges created the volume; want exactly one", created)
	}
}

func TestASeedAtTheRootLeavesTheRootToRoot(t *testing.T) {
	f := newFixture(t)
	c := f.put(t, "seeds/site.tar.gz", siteTarGz(t))
	c.DestinationPath = "/"
	v, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "rooted", SizeBytes: 16 << 20, State: volume.Present, InitialContents: c})
	if err != nil {
		t.Fatal(err)
	}
	if _, uid, _ := inode(t, v.Path, "/root"); uid != 0 {
		t.Errorf("the upper root is owned by %d; want root", uid)
	}
	if _, uid, _ := inode(t, v.Path, "/root/index.html"); uid != 65534 {
		t.Errorf("index.html is owned by %d; want 65534", uid)
	}
}

func TestGrowingAFileThatIsNotExt4IsRefused(t *testing.T) {
	f := newFixture(t)
	if err := os.WriteFile(f.local.Path("junk"), bytes.Repeat([]byte{7}, 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := f.local.Converge(ctx(t), volume.Spec{VolumeID: "junk", SizeBytes: 16 << 20, State: volume.Present})
	if err == nil || !strings.Contains(err.Error(), "volume junk: grow: ") || !strings.Contains(err.Error(), "does not hold an ext4 filesystem") {
		t.Fatalf("error = %v", err)
	}
}
