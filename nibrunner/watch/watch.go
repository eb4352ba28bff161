// Package watch tells the daemon when desired.json may have changed. It
// watches the file's folder rather than the file, because the usual way to
// replace a document — write a temporary file, rename it over the old one —
// swaps the inode a file watch would be holding: create, write, rename into
// and delete in the folder all count. Events are debounced so a document
// written in several chunks is read once it is whole, and a backstop reread
// every 30 s covers an event the kernel dropped (inotify queues overflow).
package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/perm"
	"github.com/fsnotify/fsnotify"
)

// Defaults.
const (
	DefaultBackstop = 30 * time.Second
	DefaultDebounce = 150 * time.Millisecond
)

// ErrMissing is a Document's Err when the file does not exist.
var ErrMissing = errors.New("does not exist")

// Document is one reading of desired.json from its source: this
// package's Watcher (a file) or fleet.Poller (an S3 object).
type Document struct {
	// Data is the document, cut at one byte past desired.MaxDocumentBytes
	// (which Decode refuses whole); two files too large alike read the
	// same.
	Data []byte
	// Err is set when the source holds no document to take (missing,
	// unreadable); Data is nil then.
	Err error
	// Problem is what the source says of itself, as a sentence the host's
	// report carries, or "": an S3 object that cannot be read or does not
	// exist. A reading with neither Data nor Err carries only this: the
	// source could not be read (or can be again, when it is ""), and the
	// host keeps the document it has.
	Problem string
}

// Status reports whether d carries only its source's problem, and no
// reading.
func (d Document) Status() bool { return d.Data == nil && d.Err == nil }

// Watcher watches one file.
type Watcher struct {
	Path     string
	Backstop time.Duration
	Debounce time.Duration
	// Rewrites: a write to the file sends its reading even when it equals
	// the last one sent, so a reader that could not take a document (the
	// daemon, when recording it failed) is handed it again when the file
	// is written again. The backstop never resends an unchanged reading.
	Rewrites bool
}

// Run sends the file's content on out at start and whenever it changes,
// until ctx ends. A reading equal to the last one sent is not sent again,
// unless Rewrites is set and the file was written.
func (w *Watcher) Run(ctx context.Context, out chan<- Document) error {
	backstop, debounce := w.Backstop, w.Debounce
	if backstop <= 0 {
		backstop = DefaultBackstop
	}
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	dir, name := filepath.Split(filepath.Clean(w.Path))
	if err := os.MkdirAll(dir, perm.Dir); err != nil {
		return fmt.Errorf("watch %s: %w", w.Path, err)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.Path, err)
	}
	defer fw.Close()
	if err := fw.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", w.Path, err)
	}

	var last *Document
	send := func(written bool) bool {
		d := read(w.Path)
		if last != nil && same(*last, d) && !(written && w.Rewrites) {
			return true
		}
		select {
		case out <- d:
			last = &d
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !send(false) {
		return nil
	}
	tick := time.NewTicker(backstop)
	defer tick.Stop()
	var settle <-chan time.Time
	var timer *time.Timer
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) != name {
				continue
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.NewTimer(debounce)
			settle = timer.C
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			// An overflow loses events: reread now rather than wait for
			// the backstop.
			_ = err
			if !send(false) {
				return nil
			}
		case <-settle:
			settle = nil
			if !send(true) {
				return nil
			}
		case <-tick.C:
			if !send(false) {
				return nil
			}
		}
	}
}

// read reads the file, at most one byte more than a document may hold
// (desired.MaxDocumentBytes): Decode refuses what is longer than the limit
// by its length, so the rest of a larger file is never read.
func read(path string) Document {
	b, err := readAtMost(path, desired.MaxDocumentBytes+1)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Document{Err: fmt.Errorf("%s %w", path, ErrMissing)}
		}
		return Document{Err: fmt.Errorf("read %s: %w", path, err)}
	}
	return Document{Data: b}
}

func readAtMost(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

func same(a, b Document) bool {
	if (a.Err == nil) != (b.Err == nil) {
		return false
	}
	if a.Err != nil {
		return a.Err.Error() == b.Err.Error()
	}
	return bytes.Equal(a.Data, b.Data)
}
