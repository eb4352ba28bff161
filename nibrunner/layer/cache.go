package layer

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"alpnib.dev/internal/keylock"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/store"
)

// Cache fetches layers from a store into a folder and packs executable ones.
// It is safe for concurrent use; two callers preparing the same layer share
// one download.
type Cache struct {
	dir   string
	store store.Store
	// Mksquashfs is the packer's path; empty means look it up on PATH.
	Mksquashfs string
	// Images pulls image layers; nil refuses them, saying how to let the
	// host pull.
	Images Images

	locks keylock.Map // per object and per packed image
	pulls pulls       // image pulls under way, for Pulling
}

// NewCache keeps its files under dir (created if missing): objects/ holds
// fetched objects by digest, packed/ the squashfs images made from
// executables, tmp/ what is being written.
func NewCache(dir string, st store.Store) (*Cache, error) {
	for _, sub := range []string{"objects", "packed", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), perm.Dir); err != nil {
			return nil, fmt.Errorf("layer cache: %w", err)
		}
	}
	// Leftovers from a crash mid-write are never trusted; clear them.
	tmps, _ := os.ReadDir(filepath.Join(dir, "tmp"))
	for _, e := range tmps {
		_ = os.RemoveAll(filepath.Join(dir, "tmp", e.Name()))
	}
	return &Cache{dir: dir, store: st}, nil
}

// Prepare makes one layer ready to attach: fetched, verified, checked or
// packed. A failure is an *Error naming the layer.
func (c *Cache) Prepare(ctx context.Context, s Spec) (Image, error) {
	img, err := c.prepare(ctx, s)
	if err != nil {
		var le *Error
		if errors.As(err, &le) {
			return Image{}, err
		}
		return Image{}, &Error{Layer: s, Err: err}
	}
	return img, nil
}

// PrepareAll prepares an instance's layers in order and stops at the first
// that fails.
func (c *Cache) PrepareAll(ctx context.Context, specs []Spec) ([]Image, error) {
	out := make([]Image, 0, len(specs))
	for _, s := range specs {
		img, err := c.Prepare(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

func (c *Cache) prepare(ctx context.Context, s Spec) (Image, error) {
	if err := validate(s); err != nil {
		return Image{}, err
	}
	if s.Kind == OCIImage {
		if c.Images == nil {
			return Image{}, errNoImages
		}
		c.pulls.set(s.Reference, Pull{Phase: "manifest"})
		defer c.pulls.done(s.Reference)
		return c.Images.PullLayer(ctx, s.Reference, func(p Pull) { c.pulls.set(s.Reference, p) })
	}
	obj, size, err := c.object(ctx, s)
	if err != nil {
		return Image{}, err
	}
	if s.Kind == Filesystem {
		f, err := os.Open(obj)
		if err != nil {
			return Image{}, err
		}
		defer f.Close()
		format, err := Format(f)
		if err != nil {
			return Image{}, err
		}
		return Image{Path: obj, Format: format, Digest: s.Digest, Size: size}, nil
	}
	return c.packed(ctx, s, obj)
}

// errNoImages refuses an image layer on a cache that pulls none.
var errNoImages = errors.New("this host pulls no images: give it an [images] section in its config.toml (an empty one pulls anonymously) and restart it")

func (c *Cache) lock(key string) func() { return c.locks.Lock(key) }

// object returns the path of the verified object for s, fetching it when the
// cache does not hold a trustworthy copy.
func (c *Cache) object(ctx context.Context, s Spec) (string, int64, error) {
	defer c.lock("object/" + s.Digest)()
	path := filepath.Join(c.dir, "objects", s.Digest)
	if size, ok := c.trusted(path, s.Digest); ok {
		if s.SizeBytes != nil && *s.SizeBytes != size {
			return "", 0, fmt.Errorf("sizeBytes says %d but the object is %d bytes; fix sizeBytes or the upload", *s.SizeBytes, size)
		}
		return path, size, nil
	}
	info, err := c.store.Stat(ctx, s.ObjectKey)
	if err != nil {
		return "", 0, fmt.Errorf("fetch %q from the artifact store: %w", s.ObjectKey, err)
	}
	if s.SizeBytes != nil && *s.SizeBytes != info.Size {
		return "", 0, fmt.Errorf("sizeBytes says %d but the store's object %q is %d bytes; fix sizeBytes or the upload", *s.SizeBytes, s.ObjectKey, info.Size)
	}
	tmp, err := c.tempFile()
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := store.Fetch(ctx, c.store, s.ObjectKey, s.Digest, tmp)
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("fetch %q from the artifact store: %w", s.ObjectKey, cerr)
	}
	if err != nil {
		return "", 0, err
	}
	if err := c.commit(tmp.Name(), path, s.Digest); err != nil {
		return "", 0, err
	}
	return path, n, nil
}

// packed returns the squashfs holding an executable layer's program at its
// destination path, packing it when the cache does not hold one.
func (c *Cache) packed(ctx context.Context, s Spec, obj string) (Image, error) {
	name := packedName(s)
	defer c.lock("packed/" + name)()
	path := filepath.Join(c.dir, "packed", name+".sqfs")
	if rec, err := readRecord(path); err == nil {
		if size, ok := c.trusted(path, rec.digest); ok {
			return Image{Path: path, Format: squashfsFormat, Digest: rec.digest, Size: size}, nil
		}
	}
	stage, err := os.MkdirTemp(filepath.Join(c.dir, "tmp"), "pack-")
	if err != nil {
		return Image{}, err
	}
	defer os.RemoveAll(stage)
	out := filepath.Join(stage, "image.sqfs")
	if err := Pack(ctx, c.Mksquashfs, obj, s.DestinationPath, filepath.Join(stage, "root"), out); err != nil {
		return Image{}, err
	}
	digest, size, err := HashFile(out)
	if err != nil {
		return Image{}, err
	}
	if err := c.commit(out, path, digest); err != nil {
		return Image{}, err
	}
	return Image{Path: path, Format: squashfsFormat, Digest: digest, Size: size}, nil
}

// Pack writes a squashfs at out holding the program at dest (mode 0755,
// owned by root, every timestamp 0), staging it under the empty folder stage.
// The same program and dest always give the same bytes, so the packed
// image's digest is stable across hosts and runs.
func Pack(ctx context.Context, mksquashfs, program, dest, stage, out string) error {
	if mksquashfs == "" {
		p, err := lookPath("mksquashfs")
		if err != nil {
			return fmt.Errorf("pack the executable: mksquashfs is not installed (Debian squashfs-tools): %w", err)
		}
		mksquashfs = p
	}
	target := filepath.Join(stage, filepath.FromSlash(strings.TrimPrefix(dest, "/")))
	// The image must not depend on the daemon's umask.
	if err := perm.MkdirExact(stage, filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("pack the executable: %w", err)
	}
	if err := copyFile(program, target, 0o755); err != nil {
		return fmt.Errorf("pack the executable: %w", err)
	}
	if err := runMksquashfs(ctx, mksquashfs, stage, out, "-all-root"); err != nil {
		return fmt.Errorf("pack the executable with %w", err)
	}
	return nil
}

// PackTree writes a squashfs at out holding the folder tree as it is:
// owners, modes, links and hardlinks kept, every timestamp 0, no extended
// attributes, with the same compression as Pack. The same tree always gives
// the same bytes.
func PackTree(ctx context.Context, mksquashfs, tree, out string) error {
	if mksquashfs == "" {
		p, err := lookPath("mksquashfs")
		if err != nil {
			return fmt.Errorf("pack %s: mksquashfs is not installed (Debian squashfs-tools): %w", tree, err)
		}
		mksquashfs = p
	}
	if err := runMksquashfs(ctx, mksquashfs, tree, out); err != nil {
		return fmt.Errorf("pack %s with %w", tree, err)
	}
	return nil
}

func runMksquashfs(ctx context.Context, mksquashfs, stage, out string, extra ...string) error {
	args := append([]string{stage, out,
		"-noappend", "-no-xattrs", "-comp", "gzip",
		"-mkfs-time", "0", "-all-time", "0", "-quiet", "-no-progress"}, extra...)
	cmd := exec.CommandContext(ctx, mksquashfs, args...)
	// mksquashfs refuses SOURCE_DATE_EPOCH beside -all-time; the flags win.
	cmd.Env = withoutEnv(os.Environ(), "SOURCE_DATE_EPOCH")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mksquashfs: %w: %s", err, strings.TrimSpace(msg.String()))
	}
	return nil
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func (c *Cache) tempFile() (*os.File, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return os.OpenFile(filepath.Join(c.dir, "tmp", "fetch-"+hex.EncodeToString(b[:])), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// commit moves a verified file into the cache, read-only, and writes the
// record that lets later calls trust it without hashing it again.
func (c *Cache) commit(tmp, path, digest string) error {
	if err := os.Chmod(tmp, 0o440); err != nil { // read-only, and root's: tenants' programs are no one else's to read
		return err
	}
	_ = os.Remove(recordPath(path)) // a stale record must never vouch for the new file
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("layer cache: %w", err)
	}
	return writeRecord(path, digest)
}

// trusted reports whether path holds the file whose sha256 is digest: yes
// without reading it when its record matches the file's size and
// modification time; otherwise the file is hashed, and a match renews the
// record while a mismatch removes the entry so it is fetched again.
func (c *Cache) trusted(path, digest string) (int64, bool) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() {
		return 0, false
	}
	if rec, err := readRecord(path); err == nil && rec.digest == digest && rec.size == st.Size() && rec.mtime == st.ModTime().UnixNano() {
		return st.Size(), true
	}
	got, size, err := HashFile(path)
	if err != nil || got != digest {
		_ = os.Remove(recordPath(path))
		_ = os.Remove(path)
		return 0, false
	}
	if err := writeRecord(path, digest); err != nil {
		return 0, false
	}
	return size, true
}

type record struct {
	digest string
	size   int64
	mtime  int64
}

// A cache entry's record sits beside it, and is written under another
// name first; Prune counts all three files as the entry's.
const (
	recordSuffix  = ".sha256"
	writingSuffix = ".tmp"
)

func recordPath(path string) string { return path + recordSuffix }

func writeRecord(path, digest string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("%s %d %d\n", digest, st.Size(), st.ModTime().UnixNano())
	tmp := recordPath(path) + writingSuffix
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, recordPath(path))
}

func readRecord(path string) (record, error) {
	b, err := os.ReadFile(recordPath(path))
	if err != nil {
		return record{}, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || len(f[0]) != 64 {
		return record{}, fmt.Errorf("malformed record %s", recordPath(path))
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	mtime, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return record{}, fmt.Errorf("malformed record %s", recordPath(path))
	}
	return record{digest: f[0], size: size, mtime: mtime}, nil
}

// HashFile is the file's sha256 (hex) and size.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); isExec(p) {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
