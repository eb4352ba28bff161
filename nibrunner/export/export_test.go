package export

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/volume"
)

// appTree lays out what an app's volume holds under root/: files of
// several modes and owners, a nested folder, a symlink (relative and
// absolute), a hard link and an empty file.
func appTree(t testing.TB, dir string) string {
	t.Helper()
	tree := filepath.Join(dir, "tree")
	root := filepath.Join(tree, guest.VolumeUpperDir)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "srv/data/deep"), 0o755))
	must(os.WriteFile(filepath.Join(root, "srv/data/notes.txt"), []byte("hello\n"), 0o640))
	must(os.WriteFile(filepath.Join(root, "srv/data/deep/run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "srv/data/empty"), nil, 0o600))
	must(os.Symlink("notes.txt", filepath.Join(root, "srv/data/latest")))
	must(os.Symlink("/srv/data/notes.txt", filepath.Join(root, "srv/data/absolute")))
	must(os.Link(filepath.Join(root, "srv/data/notes.txt"), filepath.Join(root, "srv/data/hard")))
	for _, p := range []string{"srv", "srv/data", "srv/data/deep", "srv/data/notes.txt", "srv/data/deep/run.sh", "srv/data/empty"} {
		must(os.Lchown(filepath.Join(root, p), guest.TenantUID, guest.TenantGID))
	}
	must(os.Lchown(filepath.Join(root, "srv/data/latest"), guest.TenantUID, guest.TenantGID))
	mtime := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	must(os.Chtimes(filepath.Join(root, "srv/data/notes.txt"), mtime, mtime))
	return tree
}

// mkfs makes an ext4 image of tree, the way volume.Local formats one.
func mkfs(t testing.TB, tree, img string, size int64) {
	t.Helper()
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	if out, err := exec.Command(testenv.RequireCommand(t, "mke2fs"), "-q", "-F", "-t", "ext4", "-m", "0", "-E", "root_owner=0:0", "-d", tree, img).CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v: %s", err, out)
	}
}

func needs(t testing.TB) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs", "losetup", "mount", "umount")
}

func newWriter(t testing.TB, dir string, objects store.Streamer) *Writer {
	t.Helper()
	w, err := Open(context.Background(), Options{Objects: objects, StagingDir: filepath.Join(dir, "staging"), RecordDir: filepath.Join(dir, "records")})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

type entry struct {
	mode     fs.FileMode
	uid, gid int
	mtime    time.Time
	link     string
	sha      string
	typ      byte
}

func readArchive(t testing.TB, r io.Reader) map[string]entry {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	out := map[string]entry{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		e := entry{mode: h.FileInfo().Mode(), uid: h.Uid, gid: h.Gid, mtime: h.ModTime.UTC(), link: h.Linkname, typ: h.Typeflag}
		if h.Typeflag == tar.TypeReg {
			s := sha256.New()
			io.Copy(s, tr)
			e.sha = hex.EncodeToString(s.Sum(nil))
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			e.link = h.PAXRecords["comment"]
		}
		out[h.Name] = e
	}
}

func TestAnExportIsAGzippedTarOfTheVolumesFilesUnderDataWithOwnersModesTimesAndLinks(t *testing.T) {
	needs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "vol.ext4")
	mkfs(t, appTree(t, dir), img, 64<<20)
	objects, err := store.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, dir, objects)
	e := desired.DesiredExport{ExportId: "e1", AppId: "a", VolumeId: "v", ObjectKey: "out/a.tar.gz", DesiredState: desired.Present,
		Environment: desired.TenantEnvironment{"GREETING": "hello world", "PORT": "8080"}}
	info, err := w.Write(context.Background(), e, checkpoint.Volume{ID: "v", Path: img})
	if err != nil {
		t.Fatal(err)
	}
	st, err := objects.Stat(context.Background(), "out/a.tar.gz")
	if err != nil || info.SizeBytes != uint64(st.Size) || info.ReadyAt.IsZero() {
		t.Fatalf("export info %+v, object %+v, %v", info, st, err)
	}
	r, _, err := objects.Get(context.Background(), "out/a.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := readArchive(t, r)
	if got["pax_global_header"].link != Marker {
		t.Errorf("the archive does not begin with the export marker: %+v", got["pax_global_header"])
	}
	notes := got["data/srv/data/notes.txt"]
	if notes.mode.Perm() != 0o640 || notes.uid != guest.TenantUID || !notes.mtime.Equal(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)) {
		t.Errorf("notes.txt is %+v; want mode 0640, owner 65534, mtime 2026-03-04T05:06:07Z", notes)
	}
	if run := got["data/srv/data/deep/run.sh"]; run.mode.Perm() != 0o755 {
		t.Errorf("run.sh has mode %v, want 0755", run.mode)
	}
	if l := got["data/srv/data/latest"]; l.typ != tar.TypeSymlink || l.link != "notes.txt" {
		t.Errorf("latest is %+v, want a symlink to notes.txt", l)
	}
	if l := got["data/srv/data/absolute"]; l.typ != tar.TypeSymlink || l.link != "/srv/data/notes.txt" {
		t.Errorf("absolute is %+v, want a symlink to /srv/data/notes.txt", l)
	}
	hard, first := got["data/srv/data/hard"], got["data/srv/data/notes.txt"]
	if hard.typ == tar.TypeLink {
		hard, first = first, hard // whichever came first holds the bytes
	}
	if first.typ != tar.TypeLink || first.link == "" {
		t.Errorf("the two names of one file are not a file and a hard link to it: %+v %+v", hard, first)
	}
	if _, ok := got["data/srv/data/empty"]; !ok {
		t.Error("the empty file is missing")
	}
	if _, ok := got["data/"]; !ok {
		t.Error("the data/ folder itself is missing")
	}
	env := got[".env"]
	if env.typ != tar.TypeReg {
		t.Fatalf(".env is missing: %v", got)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "staging")); len(left) != 0 {
		t.Errorf("the export left %v in the staging folder", left)
	}
	if list, _ := w.List(context.Background()); list["e1"].SizeBytes != info.SizeBytes {
		t.Errorf("List = %v, want e1", list)
	}
}

func TestAnExportUsedAsAnotherVolumesInitialContentsGivesBackTheSameFiles(t *testing.T) {
	needs(t)
	dir := t.TempDir()
	tree := appTree(t, dir)
	img := filepath.Join(dir, "vol.ext4")
	mkfs(t, tree, img, 64<<20)
	objects, err := store.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, dir, objects)
	e := desired.DesiredExport{ExportId: "e1", ObjectKey: "a.tar.gz", Environment: desired.TenantEnvironment{}}
	if _, err := w.Write(context.Background(), e, checkpoint.Volume{ID: "v", Path: img}); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "restored")
	os.Mkdir(dest, 0o755)
	stats, err := volume.Unpack(context.Background(), filepath.Join(dir, "objects", "a.tar.gz"), dest, volume.UnpackOptions{UID: guest.TenantUID, GID: guest.TenantGID})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Skipped < 2 {
		t.Errorf("unpack skipped %d entries, want at least data/ and .env", stats.Skipped)
	}
	if _, err := os.Lstat(filepath.Join(dest, ".env")); !os.IsNotExist(err) {
		t.Error("the export's .env was unpacked into the volume")
	}
	same(t, filepath.Join(tree, guest.VolumeUpperDir), dest)
}

// same fails unless every file under want is under got with the same
// kind, permissions, bytes and link target.
func same(t testing.TB, want, got string) {
	t.Helper()
	n := 0
	filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(want, p)
		if rel == "." {
			return nil
		}
		n++
		a, _ := os.Lstat(p)
		b, err := os.Lstat(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("%s is missing: %v", rel, err)
			return nil
		}
		if a.Mode() != b.Mode() {
			t.Errorf("%s has mode %v, want %v", rel, b.Mode(), a.Mode())
		}
		switch {
		case a.Mode()&fs.ModeSymlink != 0:
			la, _ := os.Readlink(p)
			lb, _ := os.Readlink(filepath.Join(got, rel))
			if la != lb {
				t.Errorf("%s links to %q, want %q", rel, lb, la)
			}
		case a.Mode().IsRegular():
			if hash(t, p) != hash(t, filepath.Join(got, rel)) {
				t.Errorf("%s holds other bytes", rel)
			}
		}
		return nil
	})
	if n == 0 {
		t.Fatal("nothing to compare")
	}
}

func hash(t testing.TB, p string) string {
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := sha256.New()
	io.Copy(s, f)
	return hex.EncodeToString(s.Sum(nil))
}

func TestAnExportWithoutAnEnvironmentHasNoEnvFileAndAnEmptyOneAnEmptyFile(t *testing.T) {
	for _, tc := range []struct {
		env  desired.TenantEnvironment
		want string // "" with ok=false: no .env
		ok   bool
	}{{nil, "", false}, {desired.TenantEnvironment{}, "", true}, {desired.TenantEnvironment{"B": "it's", "A": "x y"}, "A='x y'\nB='it'\\''s'\n", true}} {
		dir := t.TempDir()
		os.MkdirAll(filepath.Join(dir, "f"), 0o755)
		pr, pw := io.Pipe()
		go func() {
			gz := gzip.NewWriter(pw)
			_, err := WriteTar(context.Background(), gz, dir, tc.env)
			gz.Close()
			pw.CloseWithError(err)
		}()
		gz, _ := gzip.NewReader(pr)
		tr := tar.NewReader(gz)
		found, body := false, ""
		for {
			h, err := tr.Next()
			if err != nil {
				break
			}
			if h.Name == EnvFile {
				found = true
				b, _ := io.ReadAll(tr)
				body = string(b)
			}
		}
		if found != tc.ok || body != tc.want {
			t.Errorf("environment %v: .env present %v holding %q; want %v holding %q", tc.env, found, body, tc.ok, tc.want)
		}
	}
}

func TestAnExportOfAVolumeThatIsNoFilesystemFailsAndLeavesNothingStaged(t *testing.T) {
	needs(t)
	dir := t.TempDir()
	img := filepath.Join(dir, "vol")
	os.WriteFile(img, make([]byte, 1<<20), 0o600)
	objects, _ := store.NewDir(filepath.Join(dir, "objects"))
	w := newWriter(t, dir, objects)
	_, err := w.Write(context.Background(), desired.DesiredExport{ExportId: "e1", ObjectKey: "a.tar.gz"}, checkpoint.Volume{ID: "v", Path: img})
	if err == nil || !strings.Contains(err.Error(), "export e1") {
		t.Fatalf("Write = %v, want a failure naming the export", err)
	}
	left, _ := os.ReadDir(filepath.Join(dir, "staging"))
	if len(left) != 0 {
		t.Errorf("the staging folder holds %v after a failed export", left)
	}
	if out, _ := exec.Command("losetup", "--list", "--noheadings", "--associated", img).Output(); len(out) > 0 {
		t.Errorf("a loop device is still attached: %s", out)
	}
}

func TestTheEnvFileGivesEveryValueBackByteForByteToAShellThatSourcesIt(t *testing.T) {
	sh := testenv.RequireCommand(t, "sh")
	env := desired.TenantEnvironment{
		"PLAIN": "abc-1.2:3@x/y", "SPACES": "a b  c", "QUOTES": `it's "quoted"`, "DOLLAR": "$HOME ${X} `id`",
		"NEWLINE": "one\ntwo", "EMPTY": "", "BACKSLASH": `a\b\\c`,
	}
	dir := t.TempDir()
	p := filepath.Join(dir, ".env")
	if err := os.WriteFile(p, []byte(DotEnv(env)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range env {
		out, err := exec.Command(sh, "-c", `set -a; . "$1"; printf %s "$(eval printf %s \"\$$2\")"`, "sh", p, name).Output()
		if err != nil {
			t.Fatalf("source .env: %v", err)
		}
		if string(out) != string(want) {
			t.Errorf("%s reads back %q, want %q", name, out, want)
		}
	}
}

// A tenant with root in its guest writes its volume's ext4 as it likes,
// journal included. Here the journal is one the kernel cannot load and the
// volume says it needs recovery: an export that let the host kernel replay
// it would fail to mount; one that loads no journal exports the files.
func TestAnExportNeverHasTheHostKernelReplayTheTenantsJournal(t *testing.T) {
	needs(t)
	debugfs := testenv.RequireCommand(t, "debugfs")
	dir := t.TempDir()
	img := filepath.Join(dir, "vol.ext4")
	mkfs(t, appTree(t, dir), img, 64<<20)
	out, err := exec.Command(debugfs, "-R", "bmap <8> 0", img).Output()
	if err != nil {
		t.Fatalf("find the journal's first block: %v", err)
	}
	block, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatalf("debugfs bmap said %q", out)
	}
	f, err := os.OpenFile(img, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	sb := make([]byte, 4)
	if _, err := f.ReadAt(sb, 1024+24); err != nil { // s_log_block_size
		t.Fatal(err)
	}
	size := int64(1024) << binary.LittleEndian.Uint32(sb)
	if _, err := f.WriteAt(make([]byte, size), block*size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command(debugfs, "-w", "-R", "feature needs_recovery", img).CombinedOutput(); err != nil {
		t.Fatalf("mark the volume as needing recovery: %v: %s", err, out)
	}
	objects, err := store.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, dir, objects)
	e := desired.DesiredExport{ExportId: "e1", AppId: "a", VolumeId: "v", ObjectKey: "out/a.tar.gz", DesiredState: desired.Present}
	if _, err := w.Write(context.Background(), e, checkpoint.Volume{ID: "v", Path: img}); err != nil {
		t.Fatalf("export of a volume whose journal the kernel cannot load: %v", err)
	}
	r, _, err := objects.Get(context.Background(), "out/a.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if run := readArchive(t, r)["data/srv/data/deep/run.sh"]; run.typ != tar.TypeReg || run.mode.Perm() != 0o755 {
		t.Errorf("run.sh is not in the export as it was: %+v", run)
	}
}
