package flatten

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/image/tartest"
)

type entry = tartest.Entry

var (
	dir      = tartest.Dir
	file     = tartest.File
	symlink  = tartest.Symlink
	hardlink = tartest.Hardlink
	ls       = tartest.Ls
)

func layer(t *testing.T, entries ...entry) io.Reader {
	t.Helper()
	return bytes.NewReader(tartest.Tar(t, entries...))
}

func open(t *testing.T, max int64) (*Tree, string) {
	t.Helper()
	testenv.RequireRoot(t) // owners are applied with lchown
	d := t.TempDir()
	root := filepath.Join(d, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(root, Options{MaxBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, root
}

func refusal(t *testing.T, err error, kind Kind, entry string) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("want a refusal (%s) of %q, got %v", kind, entry, err)
	}
	if fe.Kind != kind || fe.Entry != entry {
		t.Fatalf("want a refusal (%s) of %q, got %s of %q: %v", kind, entry, fe.Kind, fe.Entry, fe)
	}
	return fe
}

func TestASecondLayerDeletesAFileByWhiteoutAndReplacesADirectoryByAnOpaqueMarker(t *testing.T) {
	tr, root := open(t, 1<<20)
	ctx := context.Background()
	if err := tr.Apply(ctx, layer(t,
		dir("etc/"), file("etc/keep", "kept"), file("etc/secret", "lower"),
		dir("srv/"), file("srv/old.html", "old"), dir("srv/sub/"), file("srv/sub/deep", "old"),
	)); err != nil {
		t.Fatal(err)
	}
	if err := tr.Apply(ctx, layer(t,
		file("etc/.wh.secret", ""),
		dir("srv/"), file("srv/index.html", "new"), file("srv/.wh..wh..opq", ""),
	)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/secret")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etc/secret should be deleted by the whiteout, got %v", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/.wh.secret")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the whiteout itself must not appear in the tree, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/keep")); string(b) != "kept" {
		t.Errorf("etc/keep = %q, want kept", b)
	}
	names := ls(t, filepath.Join(root, "srv"))
	if names != "index.html" {
		t.Errorf("srv holds %q after the opaque marker, want only the upper layer's index.html", names)
	}
}

func TestOwnersModesHardlinksAndSymlinksAreKept(t *testing.T) {
	tr, root := open(t, 1<<20)
	su := file("bin/tool", "#!/bin/sh\n")
	su.Mode, su.UID, su.GID = 0o4755, 0, 0
	owned := file("home/app/data", "x")
	owned.UID, owned.GID, owned.Mode = 1000, 1001, 0o600
	sticky := dir("tmp/")
	sticky.Mode = 0o1777
	if err := tr.Apply(context.Background(), layer(t,
		su, owned, sticky, hardlink("bin/tool2", "bin/tool"), symlink("bin/sh", "/bin/tool"),
	)); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(filepath.Join(root, "bin/tool"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o755|os.ModeSetuid {
		t.Errorf("bin/tool mode %v, want -rwsr-xr-x", fi.Mode())
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Nlink != 2 {
		t.Errorf("bin/tool has %d links, want 2 (bin/tool2 is its hardlink)", st.Nlink)
	}
	fi, _ = os.Lstat(filepath.Join(root, "home/app/data"))
	st = fi.Sys().(*syscall.Stat_t)
	if st.Uid != 1000 || st.Gid != 1001 || fi.Mode() != 0o600 {
		t.Errorf("home/app/data is %d:%d %v, want 1000:1001 -rw-------", st.Uid, st.Gid, fi.Mode())
	}
	fi, _ = os.Lstat(filepath.Join(root, "tmp"))
	if fi.Mode()&os.ModeSticky == 0 {
		t.Errorf("tmp mode %v, want the sticky bit", fi.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(root, "bin/sh")); target != "/bin/tool" {
		t.Errorf("bin/sh -> %q, want /bin/tool kept as written", target)
	}
}

func TestAnEntryClimbingOutOfTheRootIsRefusedAndNothingIsWrittenOutside(t *testing.T) {
	tr, root := open(t, 1<<20)
	err := tr.Apply(context.Background(), layer(t, file("../../escaped", "x")))
	fe := refusal(t, err, Escape, "../../escaped")
	if !strings.Contains(fe.Error(), "climbs out of the image's root") {
		t.Errorf("the sentence should say the entry climbs out: %v", fe)
	}
	for _, p := range []string{filepath.Join(root, "../../escaped"), filepath.Join(root, "../escaped")} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written outside the root", p)
		}
	}
}

func TestALayersPlantedLinkIsNeverFollowedOutOfTheTree(t *testing.T) {
	tr, root := open(t, 1<<20)
	outside := t.TempDir()
	// The first layer plants links to a folder outside the tree, absolute
	// and relative; the second writes through them.
	if err := tr.Apply(context.Background(), layer(t,
		symlink("abs", outside), symlink("rel", "../../../../../../../../"+strings.TrimPrefix(outside, "/")),
	)); err != nil {
		t.Fatal(err)
	}
	if err := tr.Apply(context.Background(), layer(t,
		file("abs/pwned", "abs"), file("rel/pwned2", "rel"), hardlink("abs/h", "abs/pwned"),
	)); err != nil {
		t.Fatal(err)
	}
	if got := ls(t, outside); got != "" {
		t.Fatalf("the folder outside the tree got %q: a link was followed out", got)
	}
	// Inside the guest "abs" resolves from the image's own root, and so it
	// does here: the files land under root/<outside>.
	if b, err := os.ReadFile(filepath.Join(root, outside, "pwned")); err != nil || string(b) != "abs" {
		t.Errorf("abs/pwned should land at %s inside the tree: %q %v", outside, b, err)
	}
	if b, err := os.ReadFile(filepath.Join(root, outside, "pwned2")); err != nil || string(b) != "rel" {
		t.Errorf("rel/pwned2 should land at %s inside the tree: %q %v", outside, b, err)
	}
}

func TestAHardlinkToAFileOutsideTheRootIsRefused(t *testing.T) {
	tr, _ := open(t, 1<<20)
	err := tr.Apply(context.Background(), layer(t, hardlink("passwd", "../../../etc/passwd")))
	refusal(t, err, Escape, "passwd")
}

func TestADeviceNodeIsRefusedNamingTheEntry(t *testing.T) {
	tr, root := open(t, 1<<20)
	err := tr.Apply(context.Background(), layer(t, dir("dev/"), tartest.Device("dev/mem", tar.TypeChar)))
	fe := refusal(t, err, Device, "dev/mem")
	if !strings.Contains(fe.Error(), `"dev/mem"`) || !strings.Contains(fe.Error(), "device node") {
		t.Errorf("the sentence should name dev/mem and say it is a device node: %v", fe)
	}
	if _, err := os.Lstat(filepath.Join(root, "dev/mem")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dev/mem was created")
	}
}

// zeros is an endless stream, as a gzip bomb decompresses to.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

func TestALayerPastTheSizeLimitStopsAtTheLimit(t *testing.T) {
	const limit = 4 << 20
	tr, _ := open(t, limit)
	// One file header claiming a 1 TiB file, then endless data.
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	if err := tw.WriteHeader(&tar.Header{Name: "bomb", Typeflag: tar.TypeReg, Mode: 0o644, Size: 1 << 40}); err != nil {
		t.Fatal(err)
	}
	src := &zeros{}
	err := tr.Apply(context.Background(), io.MultiReader(&hdr, src))
	fe := refusal(t, err, TooLarge, "bomb")
	if !strings.Contains(fe.Error(), "4194304 bytes") {
		t.Errorf("the sentence should name the limit: %v", fe)
	}
	if src.n > 2*limit {
		t.Errorf("read %d bytes of the bomb, want it stopped near the %d-byte limit", src.n, limit)
	}
	// A stream of many small files past the limit stops too.
	tr2, _ := open(t, limit)
	var many []entry
	for i := 0; i < 100; i++ {
		many = append(many, file("f"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune('0'+i/26)), strings.Repeat("z", 64<<10)))
	}
	var fe2 *Error
	if err := tr2.Apply(context.Background(), layer(t, many...)); !errors.As(err, &fe2) || fe2.Kind != TooLarge {
		t.Errorf("6.4 MB of small files past a 4 MiB limit: want a too-large refusal, got %v", err)
	}
}
