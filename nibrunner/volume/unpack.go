package volume

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
)

// countingReader adds what is read through it to n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	k, err := c.r.Read(b)
	c.n.Add(int64(k))
	return k, err
}

// ArchiveFormat is what an initialContents object turned out to be.
type ArchiveFormat string

// The archive formats a volume can be seeded from.
const (
	Tar   ArchiveFormat = "tar"
	TarGz ArchiveFormat = "tar.gz"
	Zip   ArchiveFormat = "zip"
)

// DetectArchive reads the first bytes of an archive and names its format
// from its magic, not its key: a tar (ustar or GNU magic at 257), a gzip
// (1f 8b, taken to hold a tar), or a zip (PK 03 04, or PK 05 06 when empty).
// Anything else is an error saying what was found.
func DetectArchive(head []byte) (ArchiveFormat, error) {
	switch {
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		return TarGz, nil
	case len(head) >= 4 && (string(head[:4]) == "PK\x03\x04" || string(head[:4]) == "PK\x05\x06"):
		return Zip, nil
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return Tar, nil
	case len(head) >= 6 && string(head[:6]) == "\xfd7zXZ\x00":
		return "", errors.New("the archive is xz-compressed; use a tar, tar.gz or zip")
	case len(head) >= 4 && string(head[:4]) == "\x28\xb5\x2f\xfd":
		return "", errors.New("the archive is zstd-compressed; use a tar, tar.gz or zip")
	case len(head) >= 3 && string(head[:3]) == "BZh":
		return "", errors.New("the archive is bzip2-compressed; use a tar, tar.gz or zip")
	case len(head) == 0:
		return "", errors.New("the archive is empty")
	}
	n := min(len(head), 4)
	return "", fmt.Errorf("not a tar, tar.gz or zip: found %x at byte 0", head[:n])
}

// UnpackOptions says whose the unpacked entries are and how much may be
// written.
type UnpackOptions struct {
	UID, GID int
	// Limit caps the space the entries may take (the file bytes written
	// rounded up to 4 KiB blocks, a block for a file with none and one per
	// folder and link; runs of zeros are left as holes and cost nothing,
	// see writeHoles), so an archive too
	// big for its volume — or a zip bomb — stops within 64 KiB of the cap
	// instead of filling the host's disk; the files' sizes, holes
	// included, may be at most 64 times the cap, and at most 256 GiB more
	// than it. 0 means no cap.
	Limit int64
	// Progress, when set, counts the file bytes written as they are.
	Progress *atomic.Int64
}

// UnpackStats counts what an unpack wrote.
type UnpackStats struct {
	Format  ArchiveFormat
	Files   int
	Dirs    int
	Links   int // symlinks and hard links
	Skipped int // archiver junk
	Bytes   int64
}

// ErrDoesNotFit is wrapped by unpack errors when the archive is larger than
// the space it was given.
var ErrDoesNotFit = errors.New("the archive does not fit in the volume")

// Unpack extracts the archive file at archive into the folder dest (which
// must exist) safely: every entry ends up inside dest or the unpack fails.
// Entries are owned by opt.UID:opt.GID and lose their set-id and sticky
// bits. Refused, failing the whole unpack: an entry whose name is absolute
// or has a .. segment; a symlink whose target is absolute or climbs out of
// dest; a symlink in a zip; a hard link to anything but an earlier entry;
// a device node, FIFO or socket. Archiver junk (.DS_Store, __MACOSX/,
// Thumbs.db, AppleDouble ._ files, editor swap and backup files) is skipped.
func Unpack(ctx context.Context, archive, dest string, opt UnpackOptions) (UnpackStats, error) {
	f, err := os.Open(archive)
	if err != nil {
		return UnpackStats{}, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	format, err := DetectArchive(head[:n])
	if err != nil {
		return UnpackStats{}, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return UnpackStats{}, err
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return UnpackStats{}, err
	}
	defer root.Close()
	u := &unpacker{ctx: ctx, root: root, opt: opt, stats: UnpackStats{Format: format}, files: map[string]bool{}}
	switch format {
	case Tar:
		err = u.tar(tar.NewReader(bufio.NewReader(f)))
	case TarGz:
		var gz *gzip.Reader
		gz, err = gzip.NewReader(bufio.NewReader(f))
		if err == nil {
			err = u.tar(tar.NewReader(gz))
		}
	case Zip:
		st, serr := f.Stat()
		if serr != nil {
			return u.stats, serr
		}
		var zr *zip.Reader
		zr, err = zip.NewReader(f, st.Size())
		if err == nil {
			err = u.zip(zr)
		}
	}
	if err != nil {
		return u.stats, err
	}
	return u.stats, u.own(dest)
}

// ExportMarker is the comment of the pax global header an export's archive
// begins with (nibrunner/export writes it). An archive that carries it is
// an export: its data/ folder is the app's files, unpacked at
// destinationPath with the data/ prefix removed, and its .env (and
// anything else beside data/) is left out. So an export of one host's
// volume, given as another volume's initialContents with destinationPath
// "/", gives back the same files.
const ExportMarker = "nibrun-export v1"

// exportEntry maps an export's entry name to where it lands: data/x is x,
// data itself is the destination (skipped: it exists), anything else is
// not the app's (skipped).
func exportEntry(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "data/")
	if !ok || rest == "" {
		return "", true
	}
	return rest, false
}

type unpacker struct {
	// export: the archive is an export (ExportMarker), so absolute symlink
	// targets are kept too — they name paths in the guest's root, and
	// nothing is written through a link (os.Root refuses leaving dest).
	export bool
	ctx    context.Context
	root   *os.Root
	opt    UnpackOptions
	stats  UnpackStats
	used   int64
	// logical sums the files' sizes, holes included (see holeAllowance).
	logical int64
	files   map[string]bool // regular files written, for hard links
}

// holeAllowance bounds the files' sizes, holes included, at this many
// times the limit. A hole costs no disk but is still read (as zeros from
// the archive reader) and checked, so an archive of a few bytes that
// claims a sparse file of a petabyte would otherwise keep an unpack busy
// for days; a volume's sparse files are rarely more than a few times its
// size. Past a few GiB of limit the multiple is too generous (a 100 GiB
// volume would allow 6.4 TiB of zeros, half an hour of reading), so the
// holes are also bounded outright: at most maxHoleBytes beyond the limit
// (256 GiB, about a minute of reading zeros here).
const (
	holeAllowance = 64
	maxHoleBytes  = 256 << 30
)

// logicalCap is how large the files' sizes, holes included, may grow
// under limit (see holeAllowance).
func logicalCap(limit int64) int64 { return min(holeAllowance*limit, limit+maxHoleBytes) }

const blockSize = 4096

func (u *unpacker) charge(n int64) error {
	u.used += (n + blockSize - 1) / blockSize * blockSize
	if n == 0 {
		u.used += blockSize
	}
	if u.opt.Limit > 0 && u.used > u.opt.Limit {
		return fmt.Errorf("%w: its entries need more than %d bytes", ErrDoesNotFit, u.opt.Limit)
	}
	return nil
}

func (u *unpacker) tar(tr *tar.Reader) error {
	for {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			if u.stats.Files+u.stats.Dirs+u.stats.Links+u.stats.Skipped == 0 {
				return errors.New("the archive holds no entries (or is not a tar)")
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the archive: %w", err)
		}
		switch h.Typeflag {
		case tar.TypeXGlobalHeader:
			if h.PAXRecords["comment"] == ExportMarker {
				u.export = true
			}
			continue
		case tar.TypeXHeader, tar.TypeGNULongName, tar.TypeGNULongLink:
			continue
		}
		name, skip, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if u.export && !skip {
			name, skip = exportEntry(name)
			if h.Typeflag == tar.TypeLink {
				h.Linkname, _ = exportEntry(h.Linkname)
			}
		}
		if skip {
			u.stats.Skipped++
			continue
		}
		mode := h.FileInfo().Mode().Perm()
		switch h.Typeflag {
		case tar.TypeReg, 0, tar.TypeGNUSparse: // 0: pre-POSIX regular files
			if err := u.file(name, tr, h.Size, mode); err != nil {
				return err
			}
			if !h.ModTime.IsZero() {
				_ = u.root.Chtimes(name, h.ModTime, h.ModTime)
			}
		case tar.TypeDir:
			if err := u.dir(name, mode); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := u.symlink(name, h.Linkname); err != nil {
				return err
			}
		case tar.TypeLink:
			if err := u.hardlink(name, h.Linkname); err != nil {
				return err
			}
		case tar.TypeChar, tar.TypeBlock:
			return fmt.Errorf("entry %q is a device node; only files, folders and links can seed a volume", h.Name)
		case tar.TypeFifo:
			return fmt.Errorf("entry %q is a FIFO; only files, folders and links can seed a volume", h.Name)
		default:
			return fmt.Errorf("entry %q has tar type %q, which cannot seed a volume", h.Name, h.Typeflag)
		}
	}
}

func (u *unpacker) zip(zr *zip.Reader) error {
	if len(zr.File) == 0 {
		return errors.New("the zip holds no entries")
	}
	for _, zf := range zr.File {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		if strings.Contains(zf.Name, `\`) {
			return fmt.Errorf("entry %q has a backslash in its name; zip names use /", zf.Name)
		}
		name, skip, err := entryName(zf.Name)
		if err != nil {
			return err
		}
		if skip {
			u.stats.Skipped++
			continue
		}
		m := zf.Mode()
		switch {
		case m&fs.ModeSymlink != 0:
			return fmt.Errorf("entry %q is a symlink, and a zip may not carry one (its target is unchecked data); use a tar", zf.Name)
		case m.IsDir() || strings.HasSuffix(zf.Name, "/"):
			if err := u.dir(name, m.Perm()|0o700); err != nil {
				return err
			}
		case m.IsRegular():
			perm := m.Perm()
			if perm == 0 {
				perm = 0o644 // zips made on Windows carry no Unix mode
			}
			r, err := zf.Open()
			if err != nil {
				return fmt.Errorf("entry %q: %w", zf.Name, err)
			}
			err = u.file(name, r, int64(zf.UncompressedSize64), perm)
			r.Close()
			if err != nil {
				return err
			}
			if mt := zf.Modified; !mt.IsZero() {
				_ = u.root.Chtimes(name, mt, mt)
			}
		default:
			return fmt.Errorf("entry %q is a %s; only files and folders can seed a volume from a zip", zf.Name, kindOf(m))
		}
	}
	return nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0:
		return "device node"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// holeChunk is the unit of hole finding on restore: an aligned run of
// this many zero bytes becomes a hole. It is a multiple of every common
// filesystem block size, so a hole left is a hole the filesystem keeps.
const holeChunk = 64 << 10

var zeroChunk [holeChunk]byte

// writeHoles copies r into the new, empty file f, leaving each aligned
// holeChunk of zeros (and a last, shorter chunk of zeros) as a hole (seeked over, not written), and sets the
// file's size at the end, so a file that ends in zeros ends in a hole. It
// charges the bytes it writes as it writes them, so an archive that does
// not fit stops within a chunk of its limit. It returns the bytes read and
// the bytes written.
func (u *unpacker) writeHoles(f *os.File, r io.Reader) (read, written int64, err error) {
	buf := make([]byte, holeChunk)
	for {
		k, rerr := io.ReadFull(r, buf)
		if k > 0 {
			if !bytes.Equal(buf[:k], zeroChunk[:k]) {
				if err := u.charge(int64(k)); err != nil {
					return read, written, err
				}
				if _, err := f.WriteAt(buf[:k], read); err != nil {
					return read, written, err
				}
				written += int64(k)
			}
			read += int64(k)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return read, written, rerr
		}
		if err := u.ctx.Err(); err != nil {
			return read, written, err
		}
	}
	return read, written, f.Truncate(read)
}

// file writes one regular file. It writes at most the declared size (a
// longer stream is a corrupt archive), keeps its runs of zeros as holes
// (writeHoles) and charges what it writes, rounded up to blocks (a block
// when it writes nothing): a sparse file costs its data, not its size.
func (u *unpacker) file(name string, r io.Reader, size int64, perm fs.FileMode) error {
	u.logical += size
	if size < 0 || u.opt.Limit > 0 && u.logical > logicalCap(u.opt.Limit) {
		return fmt.Errorf("entry %q: %w: its files' sizes, holes included, pass %d bytes (%d times the limit, and at most 256 GiB of holes), and every hole is read", name, ErrDoesNotFit, logicalCap(u.opt.Limit), holeAllowance)
	}
	if err := u.parent(name); err != nil {
		return err
	}
	if err := u.clear(name); err != nil {
		return err
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if u.opt.Progress != nil {
		r = countingReader{r, u.opt.Progress}
	}
	n, written, err := u.writeHoles(f, io.LimitReader(r, size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("entry %q: declared %d bytes, holds %d", name, size, n)
	}
	if written == 0 {
		if err := u.charge(0); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	if err := u.root.Chmod(name, perm); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	u.files[name] = true
	u.stats.Files++
	u.stats.Bytes += n
	return nil
}

func (u *unpacker) dir(name string, perm fs.FileMode) error {
	if name == "." {
		return nil
	}
	if err := u.charge(0); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if st, err := u.root.Lstat(name); err == nil && !st.IsDir() {
		if err := u.root.Remove(name); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	if err := u.root.MkdirAll(name, 0o755); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if err := u.root.Chmod(name, perm); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	u.stats.Dirs++
	return nil
}

func (u *unpacker) symlink(name, target string) error {
	if target == "" || path.IsAbs(target) && !u.export {
		return fmt.Errorf("entry %q is a symlink to %q, outside the folder; links must be relative and stay inside it", name, target)
	}
	resolved := path.Join(path.Dir(name), target)
	if !path.IsAbs(target) && (resolved == ".." || strings.HasPrefix(resolved, "../")) {
		return fmt.Errorf("entry %q is a symlink to %q, which climbs out of the folder", name, target)
	}
	if err := u.charge(0); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if err := u.parent(name); err != nil {
		return err
	}
	if err := u.clear(name); err != nil {
		return err
	}
	if err := u.root.Symlink(target, name); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	u.stats.Links++
	return nil
}

func (u *unpacker) hardlink(name, target string) error {
	old, _, err := entryName(target)
	if err != nil || !u.files[old] {
		return fmt.Errorf("entry %q is a hard link to %q, which is not a file earlier in the archive; hard links may only join entries inside the folder", name, target)
	}
	if err := u.parent(name); err != nil {
		return err
	}
	if err := u.clear(name); err != nil {
		return err
	}
	if err := u.root.Link(old, name); err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	u.stats.Links++
	return nil
}

// parent makes the folders above name (tar and zip may omit them).
func (u *unpacker) parent(name string) error {
	if dir := path.Dir(name); dir != "." {
		if err := u.root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("entry %q: %w", name, err)
		}
	}
	return nil
}

// clear removes what an earlier entry left at name, so a later entry
// replaces it (as tar does) rather than writing through it.
func (u *unpacker) clear(name string) error {
	st, err := u.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", name, err)
	}
	if st.IsDir() {
		return fmt.Errorf("entry %q would replace a folder of the same name", name)
	}
	delete(u.files, name)
	return u.root.Remove(name)
}

// own gives everything under dest, dest included, to the tenant. WalkDir
// does not follow symlinks and Lchown changes the link itself.
func (u *unpacker) own(dest string) error {
	return filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(p, u.opt.UID, u.opt.GID); err != nil {
			return fmt.Errorf("give %s to %d:%d: %w", p, u.opt.UID, u.opt.GID, err)
		}
		return nil
	})
}

// entryName checks an archive entry's name and returns it relative to the
// destination, or skip for archiver junk.
func entryName(raw string) (name string, skip bool, err error) {
	if raw == "" {
		return "", false, errors.New("an entry has an empty name")
	}
	if strings.ContainsRune(raw, 0) {
		return "", false, fmt.Errorf("entry %q has a NUL in its name", raw)
	}
	if path.IsAbs(raw) {
		return "", false, fmt.Errorf("entry %q has an absolute name; entries must stay inside the folder", raw)
	}
	var segs []string
	for _, seg := range strings.Split(raw, "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			return "", false, fmt.Errorf("entry %q climbs out of the folder with a .. segment", raw)
		}
		segs = append(segs, seg)
	}
	if len(segs) == 0 {
		return ".", false, nil
	}
	for _, seg := range segs {
		if isJunk(seg) {
			return "", true, nil
		}
	}
	return strings.Join(segs, "/"), false, nil
}

var swapFile = regexp.MustCompile(`^\..*\.sw[a-p]$`)

// isJunk reports whether one path segment is something archivers and
// editors leave behind rather than something the app shipped.
func isJunk(seg string) bool {
	switch {
	case seg == ".DS_Store", seg == "__MACOSX", seg == "Thumbs.db", seg == "desktop.ini":
		return true
	case strings.HasPrefix(seg, "._"): // AppleDouble resource forks
		return true
	case swapFile.MatchString(seg), strings.HasSuffix(seg, "~"), strings.HasPrefix(seg, ".#"):
		return true
	}
	return false
}

// sniff reads up to n bytes from the start of a file.
func sniff(p string, n int) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, n)
	m, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	return bytes.Clone(b[:m]), nil
}
