package export

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A file with holes is written as a PAX "GNU sparse 1.0" entry (GNU tar
// manual, appendix E.0.3): an extended header holding GNU.sparse.major=1,
// GNU.sparse.minor=0, GNU.sparse.name (the real name) and
// GNU.sparse.realsize (the real size), then a ustar header named
// <dir>/GNUSparseFile.0/<base> whose data area is the sparse map — the
// number of runs, then each run's offset and length, as decimal lines
// padded with NULs to a 512-byte block — followed by the runs' bytes, one
// after the other. Go's archive/tar reads this but cannot write it (its
// Writer drops GNU.sparse.* records), so the two headers are encoded here
// and written between the Writer's entries.

// extent is a run of a file's bytes: data, or (with Length 0 at the
// file's size) the mark that the file ends in a hole.
type extent struct{ Offset, Length int64 }

// maxRuns bounds a sparse map's runs: Go's reader refuses a map larger
// than 1 MiB, and a run's two numbers take up to 24 bytes.
const maxRuns = 20000

// dataRuns finds the data runs of f, whose size is size, with
// SEEK_DATA/SEEK_HOLE, leaving f's offset at 0. A filesystem without
// them reports the whole file as one run.
func dataRuns(f *os.File, size int64) ([]extent, error) {
	fd := int(f.Fd())
	var runs []extent
	for off := int64(0); off < size; {
		start, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if errors.Is(err, unix.EINVAL) && off == 0 {
			return []extent{{0, size}}, nil // no SEEK_DATA here
		}
		if err != nil {
			return nil, fmt.Errorf("find the data of %s: %w", f.Name(), err)
		}
		end, err := unix.Seek(fd, start, unix.SEEK_HOLE)
		if err != nil {
			return nil, fmt.Errorf("find the holes of %s: %w", f.Name(), err)
		}
		end = min(end, size)
		if end <= start {
			break
		}
		runs = append(runs, extent{start, end - start})
		off = end
	}
	// The seeks moved the file's offset, which a plain entry reads from.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewind %s: %w", f.Name(), err)
	}
	return runs, nil
}

// sparseMap turns the data runs of a file of the given size into the map
// a sparse entry carries, or nil when the file has no hole (it is written
// as a plain entry). Runs are widened to 512-byte boundaries (clamped to
// the size) and merged: GNU tar extracts each run in whole 512-byte
// blocks, so only the last run may end off a boundary, and that only at
// the file's end. A file that ends in a hole gets a last run (size, 0),
// which tells GNU tar to extend the file to its size. Runs beyond maxRuns
// are merged across their smallest gaps, whose zeros are then stored.
func sparseMap(runs []extent, size int64) []extent {
	var m []extent
	for _, r := range runs {
		start := r.Offset &^ (tarBlock - 1)
		end := min((r.Offset+r.Length+tarBlock-1)&^(tarBlock-1), size)
		if end <= start {
			continue
		}
		if n := len(m); n > 0 && m[n-1].Offset+m[n-1].Length >= start {
			m[n-1].Length = max(m[n-1].Length, end-m[n-1].Offset)
			continue
		}
		m = append(m, extent{start, end - start})
	}
	for gap := int64(tarBlock); len(m) > maxRuns; gap *= 2 {
		merged := m[:1]
		for _, r := range m[1:] {
			last := &merged[len(merged)-1]
			if r.Offset-(last.Offset+last.Length) < gap {
				last.Length = r.Offset + r.Length - last.Offset
				continue
			}
			merged = append(merged, r)
		}
		m = merged
	}
	var data int64
	for _, r := range m {
		data += r.Length
	}
	if data == size {
		return nil
	}
	if n := len(m); n == 0 || m[n-1].Offset+m[n-1].Length < size {
		m = append(m, extent{size, 0})
	}
	return m
}

const tarBlock = 512

// encodeMap renders a sparse map as its data area begins: the count, then
// offset and length per run, one decimal number a line, padded with NULs
// to a whole block.
func encodeMap(m []extent) []byte {
	var b strings.Builder
	b.WriteString(strconv.Itoa(len(m)) + "\n")
	for _, r := range m {
		b.WriteString(strconv.FormatInt(r.Offset, 10) + "\n" + strconv.FormatInt(r.Length, 10) + "\n")
	}
	return padBlock([]byte(b.String()))
}

func padBlock(b []byte) []byte {
	if r := len(b) % tarBlock; r != 0 {
		b = append(b, make([]byte, tarBlock-r)...)
	}
	return b
}

// sparseHeaders encodes the two headers of a sparse entry for h (a
// regular file's header, h.Size its real size) whose data area, map
// included, holds stored bytes: the extended header with its records,
// then the ustar header. Fields a ustar header cannot hold (a uid or gid
// over 2097151, a data area of 8 GiB or more, an mtime before 1970 or
// with a fraction of a second) travel as PAX records too.
func sparseHeaders(h *tar.Header, stored int64) ([]byte, error) {
	if strings.ContainsAny(h.Name, "\x00\n") {
		return nil, fmt.Errorf("entry %q: a NUL or newline in a name cannot be archived", h.Name)
	}
	recs := [][2]string{
		{"GNU.sparse.major", "1"},
		{"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", h.Name},
		{"GNU.sparse.realsize", strconv.FormatInt(h.Size, 10)},
	}
	const maxID, maxOctal11 = 0o7777777, 0o77777777777
	uid, gid, size, mtime := int64(h.Uid), int64(h.Gid), stored, h.ModTime.Unix()
	if uid < 0 || gid < 0 {
		return nil, fmt.Errorf("entry %q: owner %d:%d is negative", h.Name, uid, gid)
	}
	if uid > maxID {
		recs, uid = append(recs, [2]string{"uid", strconv.FormatInt(uid, 10)}), 0
	}
	if gid > maxID {
		recs, gid = append(recs, [2]string{"gid", strconv.FormatInt(gid, 10)}), 0
	}
	if size > maxOctal11 {
		recs, size = append(recs, [2]string{"size", strconv.FormatInt(size, 10)}), 0
	}
	if ns := h.ModTime.Nanosecond(); ns != 0 || mtime < 0 || mtime > maxOctal11 {
		v := strconv.FormatInt(mtime, 10)
		if ns != 0 {
			if mtime < 0 { // -1.75 is one second and a quarter before -0.5's second
				v = strconv.FormatInt(mtime+1, 10)
				ns = 1e9 - ns
				if mtime+1 == 0 {
					v = "-0"
				}
			}
			v += strings.TrimRight(fmt.Sprintf(".%09d", ns), "0")
		}
		recs = append(recs, [2]string{"mtime", v})
		mtime = max(0, min(mtime, maxOctal11))
	}
	var body []byte
	for _, r := range recs {
		body = append(body, paxRecord(r[0], r[1])...)
	}
	dir, base := path.Split(h.Name)
	xh := ustarHeader(path.Join(dir, "PaxHeaders.0", base), tar.TypeXHeader, 0o644, 0, 0, int64(len(body)), mtime)
	fh := ustarHeader(path.Join(dir, "GNUSparseFile.0", base), tar.TypeReg, h.Mode&0o7777, uid, gid, size, mtime)
	out := append(xh, padBlock(body)...)
	return append(out, fh...), nil
}

// paxRecord encodes one record, "<length> <key>=<value>\n", the length
// counting its own digits.
func paxRecord(k, v string) []byte {
	n := len(k) + len(v) + 3
	total := n + len(strconv.Itoa(n))
	if len(strconv.Itoa(total)) > len(strconv.Itoa(n)) {
		total++
	}
	return []byte(strconv.Itoa(total) + " " + k + "=" + v + "\n")
}

// ustarHeader encodes one 512-byte ustar header block. A name longer than
// the name field is split into prefix and name at a slash when it can be,
// and otherwise cut: the headers it is used for name entries that only a
// tar unaware of PAX reads.
func ustarHeader(name string, typ byte, mode, uid, gid, size, mtime int64) []byte {
	b := make([]byte, tarBlock)
	prefix := ""
	if len(name) > 100 {
		i := strings.LastIndexByte(name[:min(len(name), 156)], '/')
		if i > 0 && len(name)-i-1 <= 100 {
			prefix, name = name[:i], name[i+1:]
		} else {
			name = name[len(name)-100:]
		}
	}
	copy(b[0:100], name)
	octal(b[100:108], mode)
	octal(b[108:116], uid)
	octal(b[116:124], gid)
	octal(b[124:136], size)
	octal(b[136:148], mtime)
	b[156] = typ
	copy(b[257:263], "ustar\x00")
	copy(b[263:265], "00")
	copy(b[345:500], prefix)
	copy(b[148:156], "        ")
	var sum int64
	for _, c := range b {
		sum += int64(c)
	}
	copy(b[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// octal writes v as zero-padded octal filling field but its last byte,
// which stays NUL.
func octal(field []byte, v int64) {
	copy(field, fmt.Sprintf("%0*o", len(field)-1, v))
}

// writeSparse writes f (whose header is h, h.Size its real size) as a
// sparse entry with map m straight to w, the stream tw writes to, and
// returns the bytes of data it stored. tw must have been flushed.
func writeSparse(w io.Writer, h *tar.Header, f *os.File, m []extent) (int64, error) {
	mapBlock := encodeMap(m)
	var data int64
	for _, r := range m {
		data += r.Length
	}
	hdrs, err := sparseHeaders(h, int64(len(mapBlock))+data)
	if err != nil {
		return 0, err
	}
	if _, err := w.Write(append(hdrs, mapBlock...)); err != nil {
		return 0, err
	}
	for _, r := range m {
		n, err := io.Copy(w, io.NewSectionReader(f, r.Offset, r.Length))
		if err != nil {
			return 0, fmt.Errorf("entry %q: %w", h.Name, err)
		}
		if n != r.Length {
			return 0, fmt.Errorf("entry %q: %s shrank while it was archived (%d of %d bytes at %d)", h.Name, f.Name(), n, r.Length, r.Offset)
		}
	}
	if r := (int64(len(mapBlock)) + data) % tarBlock; r != 0 {
		if _, err := w.Write(make([]byte, tarBlock-r)); err != nil {
			return 0, err
		}
	}
	return data, nil
}
