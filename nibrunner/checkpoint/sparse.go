package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Extent is a run of a sparse file that holds data.
type Extent struct {
	Offset, Length int64
}

// Extents lists the data runs of f with SEEK_DATA and SEEK_HOLE, so that a
// copy of a 1 GiB volume holding 20 MiB reads and writes 20 MiB. A
// filesystem without them reports the whole file as one run.
func Extents(f *os.File) ([]Extent, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	var out []Extent
	fd := int(f.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole remains
		}
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
			return []Extent{{0, size}}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("find data in %s: %w", f.Name(), err)
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("find holes in %s: %w", f.Name(), err)
		}
		out = append(out, Extent{data, hole - data})
		off = hole
	}
	return out, nil
}

// CopyStats says what a sparse copy did.
type CopyStats struct {
	// Size is the file's length, holes included.
	Size int64
	// Data is the bytes in its data runs.
	Data int64
	// Written is the bytes the copy wrote: Data, or 0 when the filesystem
	// cloned the file (FICLONE) and shares its blocks.
	Written int64
	Cloned  bool
}

// CopySparse copies the file src to a new file dst keeping its holes: a
// reflink (FICLONE) where the filesystem has one, else the data runs only,
// with copy_file_range. The copy stops when ctx ends; dst is then removed.
func CopySparse(ctx context.Context, src, dst string) (st CopyStats, err error) {
	in, err := os.Open(src)
	if err != nil {
		return st, err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return st, err
	}
	st.Size = info.Size()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return st, err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	exts, err := Extents(in)
	if err != nil {
		return st, err
	}
	for _, e := range exts {
		st.Data += e.Length
	}
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) == nil {
		st.Cloned = true
		return st, nil
	}
	if err := out.Truncate(st.Size); err != nil {
		return st, err
	}
	for _, e := range exts {
		if err := copyRange(ctx, in, out, e); err != nil {
			return st, fmt.Errorf("copy %s: %w", src, err)
		}
		st.Written += e.Length
	}
	return st, out.Sync()
}

// copyRange copies one extent in chunks, checking ctx between them.
func copyRange(ctx context.Context, in, out *os.File, e Extent) error {
	const chunk = 8 << 20
	for off, end := e.Offset, e.Offset+e.Length; off < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		roff, woff := off, off
		n, err := unix.CopyFileRange(int(in.Fd()), &roff, int(out.Fd()), &woff, int(min(chunk, end-off)), 0)
		if err != nil && (errors.Is(err, unix.EXDEV) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL)) {
			m, err := io.Copy(io.NewOffsetWriter(out, off), io.NewSectionReader(in, off, min(chunk, end-off)))
			if err != nil {
				return err
			}
			n = int(m)
		} else if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%s ended at %d, inside a data run up to %d", in.Name(), off, end)
		}
		off += int64(n)
	}
	return nil
}

// The sparse container: how a checkpoint is stored as one object. A raw
// image would upload its holes as zeros; this holds only the data runs.
//
//	header:  "NIBSPRS1" (8 bytes), file size (uint64, big-endian)
//	runs:    offset (uint64), length (uint64), then length bytes; in
//	         increasing offset order, none overlapping
//	trailer: offset = file size, length = 0
//
// ReadSparse writes it back as a sparse file of the same size.
const sparseMagic = sparseMagicPrefix + "1"

// WriteSparse writes the container of the file at path to w and returns
// the bytes written.
func WriteSparse(ctx context.Context, w io.Writer, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	exts, err := Extents(f)
	if err != nil {
		return 0, err
	}
	var n int64
	hdr := make([]byte, 16)
	put := func(a, b uint64) error {
		binary.BigEndian.PutUint64(hdr[0:], a)
		binary.BigEndian.PutUint64(hdr[8:], b)
		m, err := w.Write(hdr)
		n += int64(m)
		return err
	}
	copy(hdr, sparseMagic)
	binary.BigEndian.PutUint64(hdr[8:], uint64(info.Size()))
	m, err := w.Write(hdr)
	n += int64(m)
	if err != nil {
		return n, err
	}
	for _, e := range exts {
		if err := put(uint64(e.Offset), uint64(e.Length)); err != nil {
			return n, err
		}
		m, err := io.Copy(w, io.NewSectionReader(ctxReaderAt{ctx, f}, e.Offset, e.Length))
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, put(uint64(info.Size()), 0)
}

// FormatVersion is the version of the sparse container this host writes
// and the newest it reads: the digit that ends the magic ("NIBSPRS1").
const FormatVersion = 1

// sparseMagicPrefix starts every version's magic; the eighth byte is the
// version, an ASCII digit.
const sparseMagicPrefix = "NIBSPRS"

// Header is what a sparse container's first 16 bytes say.
type Header struct {
	// Version is the container's format version (the magic's last digit).
	Version int
	// Size is the length of the file it holds, holes included.
	Size int64
}

// IsContainer reports whether head, an object's first bytes (8 or more),
// opens a sparse container of any version: a checkpoint this host family
// wrote, told apart from an archive (tar, gzip, zip) by its magic.
func IsContainer(head []byte) bool {
	return len(head) >= 8 && string(head[:7]) == sparseMagicPrefix && head[7] >= '1' && head[7] <= '9'
}

// ErrNewerFormat is wrapped by ReadHeader when the container is of a
// version newer than FormatVersion.
var ErrNewerFormat = errors.New("the checkpoint is of a newer format than this host reads")

// ReadHeader reads a container's header from r. A container of a newer
// version than this host reads is refused (ErrNewerFormat): its runs may
// not mean what this version's do.
func ReadHeader(r io.Reader) (Header, error) {
	hdr := make([]byte, 16)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return Header{}, fmt.Errorf("read the sparse container's header: %w", err)
	}
	if !IsContainer(hdr) {
		return Header{}, fmt.Errorf("not a sparse container: it starts %q, not %q", hdr[:8], sparseMagic)
	}
	h := Header{Version: int(hdr[7] - '0'), Size: int64(binary.BigEndian.Uint64(hdr[8:]))}
	if h.Version > FormatVersion {
		return h, fmt.Errorf("%w: it is format %d, and this nibrunnerd reads format %d and older; restore it on a host that runs a newer nibrunnerd, or upgrade this one", ErrNewerFormat, h.Version, FormatVersion)
	}
	if h.Size < 0 {
		return h, fmt.Errorf("the sparse container's size %d is not a file's", h.Size)
	}
	return h, nil
}

// ReadSparse reads a container from r into the new file path, holes
// restored, and returns the file's size.
func ReadSparse(r io.Reader, path string) (size int64, err error) {
	h, err := ReadHeader(r)
	if err != nil {
		return 0, err
	}
	return h.Size, ReadRuns(context.Background(), r, h, path, nil)
}

// ReadRuns reads the runs of the container whose header h was read from r
// into the new file path, h.Size long, holes restored, adding each run's
// bytes to written (when not nil) as they land. It stops when ctx ends.
// In every failure path is removed.
func ReadRuns(ctx context.Context, r io.Reader, h Header, path string, written *atomic.Int64) (err error) {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()
	size := h.Size
	if err := out.Truncate(size); err != nil {
		return err
	}
	hdr := make([]byte, 16)
	var last int64
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, hdr); err != nil {
			return fmt.Errorf("read the sparse container: %w", err)
		}
		off, n := int64(binary.BigEndian.Uint64(hdr[:8])), int64(binary.BigEndian.Uint64(hdr[8:]))
		if n == 0 && off == size {
			return out.Sync()
		}
		if off < last || n <= 0 || off+n > size || off+n < off {
			return fmt.Errorf("the sparse container's run at %d of %d bytes is out of order or past its end (%d)", off, n, size)
		}
		for done := int64(0); done < n; {
			if err := ctx.Err(); err != nil {
				return err
			}
			m, err := io.CopyN(io.NewOffsetWriter(out, off+done), r, min(n-done, 8<<20))
			done += m
			if written != nil {
				written.Add(m)
			}
			if err != nil {
				return fmt.Errorf("read the sparse container: %w", err)
			}
		}
		last = off + n
	}
}

type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}
