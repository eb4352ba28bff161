package control

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"os"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/perm"
)

// LogFile is one of an app's logs on this host.
type LogFile struct {
	// Source names it: "tenant" (the app's output) or "console" (the
	// guest's serial console).
	Source string
	Path   string
	// Rotated is where Path's older lines went when it was rotated
	// (optional); a tail that Path alone cannot fill reads on into it.
	Rotated string
}

// LogLine is one line of an app's log.
type LogLine struct {
	Source string `json:"source"`
	Line   string `json:"line"`
}

// followEvery is how often a followed log is looked at for more. Logs are
// files the VMM appends to, truncates on a start and rotates; a look at
// the size and inode finds all three without a watch per file.
const followEvery = 200 * time.Millisecond

// maxLine bounds one line; a longer one is cut there.
const maxLine = 64 << 10

// openLog opens the log at path as perm.OpenRegular does. The logs are
// root's files in root's folders (vm/qemu keeps the console out of the
// guest's vm/ since issue 42); the check stays, so that a log a VMM ever
// keeps where a guest's uid can write is still read without following
// what that uid could plant in its place.
func openLog(path string) (*os.File, error) { return perm.OpenRegular(path) }

// logRefusal logs a refusal of openLog's, for the operator to see that a
// guest tried.
func logRefusal(err error) {
	if errors.Is(err, perm.ErrUnsafe) {
		log.Printf("nibrunnerd: logs: %v", err)
	}
}

// lastLines returns the last n lines of the file at path (all of them when
// n < 0) and the offset its end was at.
func lastLines(path string, n int) ([]string, int64, error) {
	f, err := openLog(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	end := st.Size()
	// Read back from the end in chunks until n+1 newlines are in hand.
	const chunk = 64 << 10
	var buf []byte
	off := end
	for off > 0 && (n < 0 || bytes.Count(buf, []byte{'\n'}) <= n) {
		step := min(int64(chunk), off)
		off -= step
		b := make([]byte, step)
		if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, 0, err
		}
		buf = append(b, buf...)
	}
	// A last line not ended yet is left for a follower to read whole.
	if len(buf) > 0 && buf[len(buf)-1] != '\n' {
		cut := bytes.LastIndexByte(buf, '\n') + 1
		end -= int64(len(buf) - cut)
		buf = buf[:cut]
	}
	lines := splitLines(buf)
	if off > 0 && len(lines) > 0 {
		lines = lines[1:] // the first may be a part of a line
	}
	if n >= 0 && len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines, end, nil
}

func splitLines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// tail follows one file from an offset: new whole lines as they are
// written, from the start again when the file is truncated or replaced.
// A file truncated and written past the old offset between two looks (a
// guest that restarts and prints its boot) keeps its size and inode
// growing; the bytes just before the offset, held as seen, tell it.
type tail struct {
	path    string
	off     int64
	ino     uint64
	partial []byte
	seen    []byte // the file's last bytes before off, as read
	refused bool   // the last open was refused (and logged)
}

// seenLen is how many bytes before the offset a tail keeps to notice a
// rewrite.
const seenLen = 64

func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// more returns the lines written since the last look.
func (t *tail) more() []string {
	f, err := openLog(t.path)
	if err != nil {
		if !t.refused {
			logRefusal(err)
		}
		t.refused = errors.Is(err, perm.ErrUnsafe)
		return nil // not there (yet, or between a rotate and its new file)
	}
	t.refused = false
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	if ino := inode(fi); ino != t.ino || fi.Size() < t.off {
		t.ino, t.off, t.partial, t.seen = ino, 0, nil, nil
	}
	if fi.Size() == t.off {
		return nil
	}
	if len(t.seen) > 0 {
		now := make([]byte, len(t.seen))
		if _, err := f.ReadAt(now, t.off-int64(len(t.seen))); err != nil || !bytes.Equal(now, t.seen) {
			t.off, t.partial, t.seen = 0, nil, nil // rewritten from its start
		}
	}
	b := make([]byte, min(fi.Size()-t.off, 4<<20))
	n, _ := f.ReadAt(b, t.off)
	t.off += int64(n)
	t.remember(b[:n])
	data := append(t.partial, b[:n]...)
	cut := bytes.LastIndexByte(data, '\n')
	if cut < 0 {
		t.partial = cutLine(data)
		return nil
	}
	t.partial = cutLine(append([]byte(nil), data[cut+1:]...))
	return splitLines(data[:cut+1])
}

// remember keeps the last bytes read, up to seenLen of them.
func (t *tail) remember(b []byte) {
	t.seen = append(t.seen, b...)
	if len(t.seen) > seenLen {
		t.seen = append([]byte(nil), t.seen[len(t.seen)-seenLen:]...)
	}
}

func cutLine(b []byte) []byte {
	if len(b) > maxLine {
		return b[:maxLine]
	}
	return b
}

// streamLogs sends the last n lines of each file (in the order given),
// then, when follow, every line written to any of them until ctx ends.
// It fails only when no file can be read at all.
func streamLogs(ctx context.Context, files []LogFile, n int, follow bool, send func(LogLine) error) error {
	tails := make([]*tail, len(files))
	var firstErr error
	read := 0
	for i, lf := range files {
		tails[i] = &tail{path: lf.Path}
		lines, end, err := lastLines(lf.Path, n)
		if err != nil {
			logRefusal(err)
			tails[i].refused = errors.Is(err, perm.ErrUnsafe)
			if firstErr == nil || !errors.Is(err, fs.ErrNotExist) {
				firstErr = err
			}
			continue
		}
		read++
		if lf.Rotated != "" && (n < 0 || len(lines) < n) {
			want := n
			if n >= 0 {
				want = n - len(lines)
			}
			if older, _, err := lastLines(lf.Rotated, want); err == nil {
				lines = append(older, lines...)
			}
		}
		tails[i].off = end
		if f, err := openLog(lf.Path); err == nil {
			if fi, err := f.Stat(); err == nil {
				tails[i].ino = inode(fi)
			}
			seen := make([]byte, min(end, seenLen))
			if _, err := f.ReadAt(seen, end-int64(len(seen))); err == nil {
				tails[i].seen = seen
			}
			f.Close()
		}
		for _, l := range lines {
			if err := send(LogLine{Source: lf.Source, Line: l}); err != nil {
				return err
			}
		}
	}
	if read == 0 && !follow {
		return firstErr
	}
	if !follow {
		return nil
	}
	tick := time.NewTicker(followEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		for i, t := range tails {
			for _, l := range t.more() {
				if err := send(LogLine{Source: files[i].Source, Line: l}); err != nil {
					return err
				}
			}
		}
	}
}
