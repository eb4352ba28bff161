// Package flatten applies an image's layers, each an uncompressed tar in the
// OCI image layer format, in order into one directory: whiteouts (.wh.NAME)
// and opaque directories (.wh..wh..opq), owners, modes, hardlinks and
// symlinks. It never follows a link out of the directory (every path is
// resolved inside it as if it were "/", and every operation goes through an
// os.Root), never creates a device node, and stops at a byte limit so a
// gzip bomb ends there.
//
// Not kept: timestamps (the packer sets every one to 0), extended attributes
// (file capabilities among them), FIFOs (refused like device nodes).
package flatten

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Whiteout names, from the OCI image spec's layer.md ("Whiteouts").
const (
	whiteoutPrefix = ".wh."
	opaqueMarker   = ".wh..wh..opq"
	// AUFS's own metadata (".wh..wh.plnk", ".wh..wh.aufs") is never content.
	whiteoutMeta = ".wh..wh."
	// maxLinks bounds symlink resolution, as Linux's MAXSYMLINKS (40).
	maxLinks = 40
)

// Kind is why a layer was refused.
type Kind string

const (
	// Escape: an entry's name or hardlink target leaves the root.
	Escape Kind = "escape"
	// Device: a character or block device, or a FIFO.
	Device Kind = "device"
	// TooLarge: the layers unpack past Options.MaxBytes.
	TooLarge Kind = "too-large"
	// BadTar: the stream is not a tar, or an entry is malformed.
	BadTar Kind = "bad-tar"
)

// Error is a refused layer: which layer (1 is the first applied), which
// entry, why, and a sentence saying so.
type Error struct {
	Layer    int
	Entry    string
	Kind     Kind
	Sentence string
	Err      error
}

func (e *Error) Error() string {
	s := fmt.Sprintf("layer %d", e.Layer)
	if e.Entry != "" {
		s += fmt.Sprintf(", entry %q", e.Entry)
	}
	s += ": " + e.Sentence
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Options bound and observe a flattening.
type Options struct {
	// MaxBytes bounds the uncompressed tar bytes read over all layers, and
	// separately the file bytes written (a sparse entry can write more than
	// it reads). It must be positive.
	MaxBytes int64
	// Progress, when set, is called with the uncompressed bytes read so far
	// over all layers, at most once per MiB and at each layer's end.
	Progress func(unpacked int64)
}

// Tree is a directory layers are applied into. It is not safe for
// concurrent use.
type Tree struct {
	dir      string
	root     *os.Root
	opts     Options
	layer    int
	read     int64 // uncompressed tar bytes over all layers
	written  int64 // file bytes written over all layers
	reported int64
	srcErr   error // the layer stream's read failure, if any
	// ours holds every path the current layer made, and their parents:
	// an opaque marker hides the lower layers' children, not these.
	ours map[string]bool
}

// Open applies layers into dir, an existing empty directory the caller owns
// (nobody else writes into it while the Tree is open).
func Open(dir string, opts Options) (*Tree, error) {
	if opts.MaxBytes <= 0 {
		return nil, fmt.Errorf("flatten into %s: MaxBytes must be positive, not %d", dir, opts.MaxBytes)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("flatten into %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("flatten into %s: the folder is not empty (it holds %s); flatten into a new folder", dir, entries[0].Name())
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("flatten into %s: %w", dir, err)
	}
	return &Tree{dir: dir, root: root, opts: opts}, nil
}

// Close releases the tree's directory handle; the files stay.
func (t *Tree) Close() error { return t.root.Close() }

// Unpacked is the uncompressed tar bytes read so far over all layers.
func (t *Tree) Unpacked() int64 { return t.read }

// Apply reads one layer's uncompressed tar to its end-of-archive marker and
// applies it over the layers applied before. A refusal is an *Error; the
// tree is then half-applied and should be discarded.
func (t *Tree) Apply(ctx context.Context, layer io.Reader) error {
	t.layer++
	n := t.layer
	t.ours = map[string]bool{"": true}
	t.srcErr = nil
	br := &budget{t: t, r: layer}
	tr := tar.NewReader(br)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return t.fail(n, "", err)
		}
		if err := t.entry(ctx, n, tr, hdr); err != nil {
			return t.fail(n, hdr.Name, err)
		}
	}
	// What follows the end-of-archive marker is read too, within the same
	// limit: the caller's digest check needs the whole stream, and a bomb
	// hidden after the marker still stops at the limit.
	if _, err := io.Copy(io.Discard, br); err != nil {
		return t.fail(n, "", err)
	}
	t.progress(true)
	return nil
}

// fail makes err an *Error naming the layer and entry, unless it is one.
func (t *Tree) fail(layer int, entry string, err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		if fe.Entry == "" {
			fe.Entry = entry
		}
		fe.Layer = layer
		return fe
	}
	if t.srcErr != nil {
		return fmt.Errorf("layer %d: reading the layer: %w", layer, t.srcErr)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *os.PathError
	var le *os.LinkError
	if errors.As(err, &pe) || errors.As(err, &le) {
		if strings.Contains(err.Error(), "escapes") {
			return &Error{Layer: layer, Entry: entry, Kind: Escape, Sentence: "it resolves outside the image's root, so it is refused", Err: err}
		}
		return fmt.Errorf("layer %d, entry %q: %w", layer, entry, err)
	}
	return &Error{Layer: layer, Entry: entry, Kind: BadTar, Sentence: "the layer is not a readable tar archive; rebuild and push the image", Err: err}
}

// clean makes a tar name a slash path relative to the root ("" is the
// root), refusing one that climbs out of it. A leading "/" is dropped, as
// tar does.
func clean(name string) (string, error) {
	p := path.Clean("/" + name)
	// path.Clean("/"+name) already folds "..": compare with the relative
	// cleaning to see whether the name climbed above the root.
	rel := path.Clean(strings.TrimLeft(name, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", &Error{Kind: Escape, Sentence: "its name climbs out of the image's root with \"..\"; the layer is refused (a safe image never names a path outside /)"}
	}
	return strings.TrimPrefix(p, "/"), nil
}

// resolve returns p with every symlink among its components resolved inside
// the tree, as the kernel would with the tree as "/": an absolute link
// target starts again at the tree's root, ".." stops at it. The last
// component is resolved too when final is set; otherwise it is kept.
func (t *Tree) resolve(p string, final bool) (string, error) {
	var out []string
	rest := splitPath(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			continue
		}
		if len(rest) == 0 && !final {
			out = append(out, c)
			break
		}
		cand := path.Join(append(out, c)...)
		fi, err := t.root.Lstat(cand)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			out = append(out, c)
			continue
		}
		links++
		if links > maxLinks {
			return "", &Error{Kind: Escape, Sentence: fmt.Sprintf("resolving %q meets more than %d symbolic links (a loop)", p, maxLinks)}
		}
		target, err := t.root.Readlink(cand)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(target, "/") {
			out = nil
		}
		rest = append(splitPath(target), rest...)
	}
	return path.Join(out...), nil
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func rootPath(p string) string {
	if p == "" {
		return "."
	}
	return p
}

// entry applies one tar entry.
func (t *Tree) entry(ctx context.Context, layer int, tr *tar.Reader, hdr *tar.Header) error {
	name, err := clean(hdr.Name)
	if err != nil {
		return err
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	parent, err := t.resolve(dir, true)
	if err != nil {
		return err
	}
	// Whiteouts name what they hide in the lower layers.
	if strings.HasPrefix(base, whiteoutPrefix) {
		switch {
		case base == opaqueMarker:
			return t.opaque(parent)
		case strings.HasPrefix(base, whiteoutMeta):
			return nil
		}
		hidden := path.Join(parent, strings.TrimPrefix(base, whiteoutPrefix))
		if err := t.root.RemoveAll(hidden); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeChar, tar.TypeBlock:
		return &Error{Kind: Device, Sentence: fmt.Sprintf("it is a device node (%s %d:%d); nibrunner never creates one from an image (the guest's kernel makes /dev), so the layer is refused: remove it from the image", deviceKind(hdr.Typeflag), hdr.Devmajor, hdr.Devminor)}
	case tar.TypeFifo:
		return &Error{Kind: Device, Sentence: "it is a FIFO, which nibrunner does not create from an image; make it at run time instead"}
	}
	if base == "" { // the root itself
		if hdr.Typeflag != tar.TypeDir {
			return &Error{Kind: BadTar, Sentence: "the image's root must be a directory"}
		}
		return t.attrs(".", hdr, false)
	}
	if err := t.mkParents(parent); err != nil {
		return err
	}
	target := path.Join(parent, base)
	t.mark(target)
	existing, err := t.root.Lstat(target)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// A directory over a directory merges; anything else replaces.
	if exists && !(hdr.Typeflag == tar.TypeDir && existing.IsDir()) {
		if err := t.root.RemoveAll(target); err != nil {
			return err
		}
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if !exists || !existing.IsDir() {
			if err := t.root.Mkdir(target, 0o700); err != nil {
				return err
			}
		}
		return t.attrs(target, hdr, false)
	case tar.TypeReg: // archive/tar reads an old TypeRegA entry as TypeReg
		if err := t.file(ctx, target, tr, hdr.Size); err != nil {
			return err
		}
		return t.attrs(target, hdr, false)
	case tar.TypeSymlink:
		// The target is only text here: it is never followed while
		// flattening, and inside the guest it resolves in the guest's root.
		if err := t.root.Symlink(hdr.Linkname, target); err != nil {
			return err
		}
		return t.attrs(target, hdr, true)
	case tar.TypeLink:
		old, err := clean(hdr.Linkname)
		if err != nil {
			return &Error{Kind: Escape, Sentence: fmt.Sprintf("it is a hardlink to %q, outside the image's root; the layer is refused", hdr.Linkname)}
		}
		odir, obase := path.Split(old)
		oparent, err := t.resolve(strings.TrimSuffix(odir, "/"), true)
		if err != nil {
			return err
		}
		old = path.Join(oparent, obase)
		fi, err := t.root.Lstat(old)
		if err != nil {
			return &Error{Kind: BadTar, Sentence: fmt.Sprintf("it is a hardlink to %q, which no earlier entry made", hdr.Linkname), Err: err}
		}
		if fi.IsDir() {
			return &Error{Kind: BadTar, Sentence: fmt.Sprintf("it is a hardlink to the directory %q, which Linux does not allow", hdr.Linkname)}
		}
		return t.root.Link(old, target)
	default:
		// PAX/GNU metadata entries are consumed by archive/tar; anything
		// else (e.g. a GNU volume header) carries nothing to apply.
		return nil
	}
}

func deviceKind(f byte) string {
	if f == tar.TypeBlock {
		return "block device"
	}
	return "character device"
}

// mark records that the current layer made p (and so its parents).
func (t *Tree) mark(p string) {
	for p != "" && p != "." {
		if t.ours[p] {
			return
		}
		t.ours[p] = true
		p = path.Dir(p)
		if p == "." {
			p = ""
		}
	}
}

// mkParents makes the missing directories of dir (symlink-free, from
// resolve), root-owned 0755, as image tools do for a path whose parents the
// layer does not list.
func (t *Tree) mkParents(dir string) error {
	if dir == "" {
		return nil
	}
	fi, err := t.root.Lstat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &Error{Kind: BadTar, Sentence: fmt.Sprintf("its parent %q is not a directory", dir)}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return t.root.MkdirAll(dir, 0o755)
}

// opaque empties dir of what the lower layers put there.
func (t *Tree) opaque(dir string) error {
	t.mark(dir)
	d, err := t.root.Open(rootPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return err
	}
	for _, n := range names {
		child := path.Join(dir, n)
		if t.ours[child] {
			continue
		}
		if err := t.root.RemoveAll(child); err != nil {
			return err
		}
	}
	return nil
}

// file writes size bytes from r into a new file at p (never through a link:
// p's last component was removed first, and O_EXCL refuses one made since).
func (t *Tree) file(ctx context.Context, p string, r io.Reader, size int64) error {
	if t.written+size > t.opts.MaxBytes {
		return t.tooLarge()
	}
	f, err := t.root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	var done int64
	for done < size {
		if err := ctx.Err(); err != nil {
			f.Close()
			return err
		}
		chunk := min(int64(len(buf)), size-done)
		n, err := io.ReadFull(r, buf[:chunk])
		if n > 0 {
			if _, werr := f.Write(buf[:n]); werr != nil {
				f.Close()
				return werr
			}
			done += int64(n)
			t.written += int64(n)
		}
		if err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// attrs sets owner and mode (mode after owner: chown clears set-id bits).
func (t *Tree) attrs(p string, hdr *tar.Header, link bool) error {
	if err := t.root.Lchown(p, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	if link {
		return nil
	}
	return t.root.Chmod(p, fileMode(hdr.Mode))
}

// fileMode turns a tar mode (permission bits and the set-id and sticky
// bits as octal 04000, 02000, 01000) into an os.FileMode for Chmod.
func fileMode(m int64) os.FileMode {
	mode := os.FileMode(m & 0o777)
	if m&0o4000 != 0 {
		mode |= os.ModeSetuid
	}
	if m&0o2000 != 0 {
		mode |= os.ModeSetgid
	}
	if m&0o1000 != 0 {
		mode |= os.ModeSticky
	}
	return mode
}

func (t *Tree) tooLarge() error {
	return &Error{Kind: TooLarge, Sentence: fmt.Sprintf("the image unpacks to more than the limit of %d bytes, so it was stopped there; raise the limit if the image is meant to be this large", t.opts.MaxBytes)}
}

func (t *Tree) progress(force bool) {
	if t.opts.Progress == nil {
		return
	}
	if force || t.read-t.reported >= 1<<20 {
		t.reported = t.read
		t.opts.Progress(t.read)
	}
}

// budget counts the uncompressed bytes read and stops at the limit.
type budget struct {
	t *Tree
	r io.Reader
}

func (b *budget) Read(p []byte) (int, error) {
	left := b.t.opts.MaxBytes - b.t.read
	if left <= 0 {
		// One byte more tells a stream at exactly the limit from a longer one.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			return 0, b.t.tooLarge()
		}
		b.t.source(err)
		return 0, err
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.t.read += int64(n)
	b.t.progress(false)
	b.t.source(err)
	return n, err
}

// source keeps the layer stream's own failure (a dropped connection, a
// digest mismatch), which archive/tar passes on, so it is not taken for a
// malformed tar.
func (t *Tree) source(err error) {
	if err != nil && err != io.EOF && t.srcErr == nil {
		t.srcErr = err
	}
}
