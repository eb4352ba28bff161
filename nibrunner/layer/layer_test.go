package layer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

type fixture struct {
	store *store.Dir
	cache *layer.Cache
	dir   string
}

func newFixture(t *testing.T) *fixture {
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := layer.NewCache(dir, st)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{store: st, cache: c, dir: dir}
}

func (f *fixture) put(t *testing.T, key string, b []byte) string {
	t.Helper()
	if err := f.store.Put(ctx(t), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	return digest(b)
}

func squashfsImage(t *testing.T) []byte {
	t.Helper()
	mk := testenv.RequireCommand(t, "mksquashfs")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "img.sqfs")
	if b, err := exec.Command(mk, src, out, "-noappend", "-quiet", "-no-progress").CombinedOutput(); err != nil {
		t.Fatalf("mksquashfs: %v: %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ext4Image(t *testing.T) []byte {
	t.Helper()
	mk := testenv.RequireCommand(t, "mke2fs")
	out := filepath.Join(t.TempDir(), "img.ext4")
	if b, err := exec.Command(mk, "-q", "-F", "-t", "ext4", out, "1M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v: %s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFormatTellsSquashfsAndExt4ApartAndDescribesAnythingElse(t *testing.T) {
	ext4 := make([]byte, 2048)
	binary.LittleEndian.PutUint16(ext4[1080:], 0xEF53)
	tarball := make([]byte, 2048)
	copy(tarball[257:], "ustar")
	cases := []struct {
		name, want, wantErr string
		b                   []byte
	}{
		{"squashfs", "squashfs", "", append([]byte("hsqs"), make([]byte, 100)...)},
		{"ext4", "ext4", "", ext4},
		{"empty", "", "the object is empty", nil},
		{"short", "", "only 3 bytes long", []byte("abc")},
		{"elf", "", "found 7f454c46 at byte 0 (an ELF program: declare it kind executable)", append([]byte("\x7fELF"), make([]byte, 2000)...)},
		{"gzip", "", "a gzip file", append([]byte{0x1f, 0x8b, 8, 0}, make([]byte, 2000)...)},
		{"tar", "", "a tar archive", tarball},
		{"zeros", "", "found 00000000 at byte 0 and 0x0000 at byte 1080", make([]byte, 4096)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := layer.Format(bytes.NewReader(c.b))
			if c.wantErr == "" {
				if err != nil || got != c.want {
					t.Fatalf("Format = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Format error = %v; want it to say %q", err, c.wantErr)
			}
		})
	}
}

func TestAFilesystemLayerIsFetchedVerifiedAndItsFormatRead(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		format string
		image  []byte
	}{{"squashfs", squashfsImage(t)}, {"ext4", ext4Image(t)}} {
		d := f.put(t, "layers/"+c.format, c.image)
		img, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "layers/" + c.format})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(img.Path)
		if img.Format != c.format || img.Digest != d || !bytes.Equal(got, c.image) || img.Size != int64(len(c.image)) {
			t.Fatalf("%s image = %+v", c.format, img)
		}
	}
}

func TestAFilesystemLayerWithBadMagicFailsNamingTheLayerAndWhatWasFound(t *testing.T) {
	f := newFixture(t)
	d := f.put(t, "notes.txt", bytes.Repeat([]byte("just text "), 200))
	_, err := f.cache.Prepare(ctx(t), layer.Spec{Index: 2, Kind: layer.Filesystem, Digest: d, ObjectKey: "notes.txt"})
	var le *layer.Error
	if !errors.As(err, &le) || le.Layer.Index != 2 {
		t.Fatalf("error %v is not a *layer.Error for layer 2", err)
	}
	for _, want := range []string{"layer 2 (sha256 " + d[:12] + "…)", "not a squashfs or ext4 image", "found 6a757374 at byte 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestADigestMismatchFailsNamingTheLayerAndCachesNothing(t *testing.T) {
	f := newFixture(t)
	image := squashfsImage(t)
	actual := f.put(t, "l.sqfs", image)
	claimed := digest([]byte("something else"))
	_, err := f.cache.Prepare(ctx(t), layer.Spec{Index: 1, Kind: layer.Filesystem, Digest: claimed, ObjectKey: "l.sqfs"})
	want := "layer 1 (sha256 " + claimed[:12] + "…): digest mismatch: the store's object \"l.sqfs\" hashes to " + actual
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error = %v\nwant it to start %q", err, want)
	}
	for _, sub := range []string{"objects", "tmp"} {
		if entries, _ := os.ReadDir(filepath.Join(f.dir, sub)); len(entries) != 0 {
			t.Errorf("%s/ holds %v after a mismatch", sub, entries)
		}
	}
}

func TestASizeBytesThatDisagreesWithTheStoreFailsTheLayer(t *testing.T) {
	f := newFixture(t)
	image := squashfsImage(t)
	d := f.put(t, "l.sqfs", image)
	wrong := int64(len(image) + 1)
	_, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "l.sqfs", SizeBytes: &wrong})
	if err == nil || !strings.Contains(err.Error(), "sizeBytes says") {
		t.Fatalf("error = %v; want a sizeBytes refusal", err)
	}
	right := int64(len(image))
	if _, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "l.sqfs", SizeBytes: &right}); err != nil {
		t.Fatalf("the right sizeBytes was refused: %v", err)
	}
}

func TestAMissingObjectFailsNamingTheLayerAndTheKey(t *testing.T) {
	f := newFixture(t)
	d := digest([]byte("x"))
	_, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "nope.sqfs"})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), `layer 0 (sha256 `) || !strings.Contains(err.Error(), `"nope.sqfs"`) {
		t.Fatalf("error = %v", err)
	}
}

func TestACachedLayerIsServedWithoutTheStore(t *testing.T) {
	f := newFixture(t)
	d := f.put(t, "l.sqfs", squashfsImage(t))
	spec := layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "l.sqfs"}
	first, err := f.cache.Prepare(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Delete(ctx(t), "l.sqfs"); err != nil {
		t.Fatal(err)
	}
	again, err := f.cache.Prepare(ctx(t), spec)
	if err != nil || again != first {
		t.Fatalf("second prepare = %+v, %v; want the cached %+v", again, err, first)
	}
}

func TestACorruptedCacheEntryIsNotTrustedAndIsFetchedAgain(t *testing.T) {
	f := newFixture(t)
	image := squashfsImage(t)
	d := f.put(t, "l.sqfs", image)
	spec := layer.Spec{Kind: layer.Filesystem, Digest: d, ObjectKey: "l.sqfs"}
	img, err := f.cache.Prepare(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(img.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img.Path, []byte("hsqs but corrupted"), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err = f.cache.Prepare(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(img.Path); !bytes.Equal(got, image) {
		t.Fatal("the corrupted entry was served")
	}
}

func TestEveryFileTheCacheKeepsIsReadOnlyAndClosedToOthers(t *testing.T) {
	testenv.RequireCommand(t, "mksquashfs")
	f := newFixture(t)
	fs := f.put(t, "layers/base", squashfsImage(t))
	exe := f.put(t, "bin/app", []byte("#!/bin/sh\necho hi\n"))
	for _, s := range []layer.Spec{
		{Kind: layer.Filesystem, Digest: fs, ObjectKey: "layers/base"},
		{Kind: layer.Executable, Digest: exe, ObjectKey: "bin/app", DestinationPath: "/usr/local/bin/app"},
	} {
		if _, err := f.cache.Prepare(ctx(t), s); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	filepath.WalkDir(f.dir, func(path string, d os.DirEntry, err error) error {
		// A digest record (.sha256) is the cache's note on a file, made
		// under the daemon's umask; the layers are chmod-ed.
		if err != nil || !d.Type().IsRegular() || strings.HasSuffix(path, ".sha256") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if m := info.Mode().Perm(); m&0o222 != 0 || m&0o007 != 0 {
			t.Errorf("%s is %v: a cached layer is read-only and no one else's to read", path, m)
		}
		return nil
	})
	if n < 3 {
		t.Fatalf("the cache holds %d files; want the two objects and the packed image", n)
	}
}

func TestAnExecutableIsPackedAtItsDestinationRootOwnedMode0755(t *testing.T) {
	unsq := testenv.RequireCommand(t, "unsquashfs")
	f := newFixture(t)
	program := []byte("#!/bin/sh\necho hi\n")
	d := f.put(t, "bin/app", program)
	img, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Executable, Digest: d, ObjectKey: "bin/app", DestinationPath: "/usr/local/bin/app"})
	if err != nil {
		t.Fatal(err)
	}
	if img.Format != "squashfs" || img.Digest == d {
		t.Fatalf("image = %+v; want a squashfs with its own digest", img)
	}
	out, err := exec.Command(unsq, "-lln", img.Path).CombinedOutput()
	if err != nil {
		t.Fatalf("unsquashfs: %v: %s", err, out)
	}
	var line string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(l, "/usr/local/bin/app") {
			line = l
		}
		if strings.HasSuffix(l, "/usr/local/bin") && !strings.HasPrefix(l, "drwxr-xr-x 0/0") {
			t.Errorf("folder not root-owned 0755: %s", l)
		}
	}
	if !strings.HasPrefix(line, "-rwxr-xr-x 0/0") || !strings.Contains(line, " 1970-01-01 00:00 ") {
		t.Fatalf("packed program listed as %q; want -rwxr-xr-x 0/0 dated 1970-01-01\n%s", line, out)
	}
	dir := t.TempDir()
	if b, err := exec.Command(unsq, "-d", filepath.Join(dir, "x"), img.Path).CombinedOutput(); err != nil {
		t.Fatalf("unsquashfs: %v: %s", err, b)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "x/usr/local/bin/app")); !bytes.Equal(got, program) {
		t.Fatalf("packed program holds %q", got)
	}
}

func TestPackingTheSameExecutableTwiceGivesTheSameImage(t *testing.T) {
	program := bytes.Repeat([]byte("\x7fELF pretend program "), 5000)
	var digests []string
	for i := 0; i < 2; i++ {
		f := newFixture(t)
		d := f.put(t, "app", program)
		img, err := f.cache.Prepare(ctx(t), layer.Spec{Kind: layer.Executable, Digest: d, ObjectKey: "app", DestinationPath: "/app"})
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, img.Digest)
		time.Sleep(1100 * time.Millisecond) // a clock in the image would now differ
	}
	if digests[0] != digests[1] {
		t.Fatalf("two packs gave %s and %s", digests[0], digests[1])
	}
}

func TestAPackedImageIsCachedAndReusedWithoutThePacker(t *testing.T) {
	f := newFixture(t)
	d := f.put(t, "app", []byte("program"))
	spec := layer.Spec{Kind: layer.Executable, Digest: d, ObjectKey: "app", DestinationPath: "/bin/app"}
	first, err := f.cache.Prepare(ctx(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	f.cache.Mksquashfs = "/nonexistent/mksquashfs"
	again, err := f.cache.Prepare(ctx(t), spec)
	if err != nil || again != first {
		t.Fatalf("second prepare = %+v, %v; want the cached %+v", again, err, first)
	}
}

func TestLayerSpecsThatCannotBeRightAreRefusedByName(t *testing.T) {
	f := newFixture(t)
	d := digest([]byte("x"))
	for _, s := range []layer.Spec{
		{Kind: layer.Filesystem, Digest: "ABC", ObjectKey: "k"},
		{Kind: "tarball", Digest: d, ObjectKey: "k"},
		{Kind: layer.Executable, Digest: d, ObjectKey: "k", DestinationPath: "/sbin/init"},
		{Kind: layer.Executable, Digest: d, ObjectKey: "k", DestinationPath: "relative"},
		{Kind: layer.Executable, Digest: d, ObjectKey: "k", DestinationPath: "/a/../b"},
	} {
		s.Index = 3
		if _, err := f.cache.Prepare(ctx(t), s); err == nil || !strings.HasPrefix(err.Error(), "layer 3 (sha256 ") {
			t.Errorf("%+v: error = %v", s, err)
		}
	}
}

func TestALayerIsFetchedFromAnS3Store(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "layers")
	st, err := store.Open(ctx(t), "s3://layers/prod")
	if err != nil {
		t.Fatal(err)
	}
	image := squashfsImage(t)
	if err := st.Put(ctx(t), "base.sqfs", bytes.NewReader(image), int64(len(image))); err != nil {
		t.Fatal(err)
	}
	c, err := layer.NewCache(t.TempDir(), st)
	if err != nil {
		t.Fatal(err)
	}
	img, err := c.Prepare(ctx(t), layer.Spec{Kind: layer.Filesystem, Digest: digest(image), ObjectKey: "base.sqfs"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(img.Path); !bytes.Equal(got, image) || img.Format != "squashfs" {
		t.Fatalf("image = %+v", img)
	}
}

func TestPruneKeepsWhatIsInUseAndFreesTheRest(t *testing.T) {
	f := newFixture(t)
	keepFS := layer.Spec{Kind: layer.Filesystem, Digest: f.put(t, "keep.sqfs", squashfsImage(t)), ObjectKey: "keep.sqfs"}
	keepExe := layer.Spec{Kind: layer.Executable, Digest: f.put(t, "keep-bin", []byte("keep")), ObjectKey: "keep-bin", DestinationPath: "/bin/keep"}
	dropFS := layer.Spec{Kind: layer.Filesystem, Digest: f.put(t, "drop.sqfs", append(squashfsImage(t), 0)), ObjectKey: "drop.sqfs"}
	dropExe := layer.Spec{Kind: layer.Executable, Digest: f.put(t, "drop-bin", bytes.Repeat([]byte("drop"), 100000)), ObjectKey: "drop-bin", DestinationPath: "/bin/drop"}
	imgs := map[string]layer.Image{}
	for name, s := range map[string]layer.Spec{"keepFS": keepFS, "keepExe": keepExe, "dropFS": dropFS, "dropExe": dropExe} {
		img, err := f.cache.Prepare(ctx(t), s)
		if err != nil {
			t.Fatal(err)
		}
		imgs[name] = img
	}
	before, err := f.cache.Bytes()
	if err != nil || before == 0 {
		t.Fatalf("cache bytes = %d, %v", before, err)
	}
	freed, err := f.cache.Prune([]layer.Spec{keepFS, keepExe})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := f.cache.Bytes()
	if freed <= 0 || after != before-freed {
		t.Fatalf("freed %d: %d bytes before, %d after", freed, before, after)
	}
	for name, img := range imgs {
		_, err := os.Stat(img.Path)
		if kept := strings.HasPrefix(name, "keep"); kept != (err == nil) {
			t.Errorf("%s: kept=%v but stat says %v", name, kept, err)
		}
	}
	f.cache.Mksquashfs = "/nonexistent"
	if _, err := f.cache.Prepare(ctx(t), keepExe); err != nil {
		t.Fatalf("a kept executable needs packing again: %v", err)
	}
}

// countingStore counts the objects fetched through it.
type countingStore struct {
	store.Store
	mu   sync.Mutex
	gets int
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	c.mu.Lock()
	c.gets++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func TestConcurrentPreparesOfOneLayerShareOneDownload(t *testing.T) {
	dir, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	image := append([]byte("hsqs"), bytes.Repeat([]byte{1}, 4<<20)...)
	if err := dir.Put(ctx(t), "l", bytes.NewReader(image), int64(len(image))); err != nil {
		t.Fatal(err)
	}
	counting := &countingStore{Store: dir}
	c, err := layer.NewCache(t.TempDir(), counting)
	if err != nil {
		t.Fatal(err)
	}
	spec := layer.Spec{Kind: layer.Filesystem, Digest: digest(image), ObjectKey: "l"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Prepare(ctx(t), spec)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if counting.gets != 1 {
		t.Fatalf("%d downloads for 8 concurrent prepares of one layer", counting.gets)
	}
}

// The daemon prunes in the background while an app's layers are made
// ready; the record a prepare is writing belongs to the entry it is for,
// a fetched object's or a packed image's.
func TestPruneLeavesTheRecordBeingWrittenForAKeptLayer(t *testing.T) {
	f := newFixture(t)
	keepFS := layer.Spec{Kind: layer.Filesystem, Digest: f.put(t, "keep.sqfs", squashfsImage(t)), ObjectKey: "keep.sqfs"}
	keepExe := layer.Spec{Kind: layer.Executable, Digest: f.put(t, "keep-bin", []byte("keep")), ObjectKey: "keep-bin", DestinationPath: "/bin/keep"}
	var kept, writing []string
	for _, s := range []layer.Spec{keepFS, keepExe} {
		img, err := f.cache.Prepare(ctx(t), s)
		if err != nil {
			t.Fatal(err)
		}
		w := img.Path + ".sha256.tmp"
		if err := os.WriteFile(w, []byte("a record on its way\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		kept, writing = append(kept, img.Path), append(writing, w)
	}
	if _, err := f.cache.Prune([]layer.Spec{keepFS, keepExe}); err != nil {
		t.Fatal(err)
	}
	for i := range kept {
		if _, err := os.Stat(writing[i]); err != nil {
			t.Errorf("prune removed %s, the record being written for a layer it keeps (%v); the prepare's rename then fails", filepath.Base(writing[i]), err)
		}
		if _, err := os.Stat(kept[i]); err != nil {
			t.Errorf("prune removed the kept layer: %v", err)
		}
	}
}
