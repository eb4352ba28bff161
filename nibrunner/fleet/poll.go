package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/store"
)

// Getter reads an object unless its ETag is still the one held, and
// refuses one larger than limit bytes (*store.S3 is one).
type Getter interface {
	GetIfChanged(ctx context.Context, key, etag string, limit int64) ([]byte, string, error)
}

// sizer is what a Getter may also do: tell an object's size (*store.S3's
// Stat, a HEAD request). The poller asks it only after a read failed, to
// say whether the object was too large.
type sizer interface {
	Stat(ctx context.Context, key string) (store.Info, error)
}

// TooLargeError is a desired.json object larger than a document may be
// (desired.MaxDocumentBytes): it is not read, as a local file that large
// is refused.
type TooLargeError struct {
	URL  string
	Size int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s (%d bytes) %s", e.URL, e.Size, desired.TooLarge())
}

// Poller mirrors one desired.json object into a local file.
type Poller struct {
	Source Getter
	Key    string
	// URL names the object in log lines.
	URL string
	// Mirror is the local file the daemon watches.
	Mirror string
	// Interval is the time between two polls.
	Interval time.Duration
	// Logf logs a line when what the poll finds changes (default: none).
	Logf func(format string, args ...any)

	etag   string
	polled bool

	mu      sync.Mutex
	lastErr string
}

// Poll asks once and brings the mirror up to date. It says whether the
// mirror changed.
func (p *Poller) Poll(parent context.Context) (bool, error) {
	p.polled = true
	ctx, cancel := context.WithTimeout(parent, min(max(p.Interval, 5*time.Second), 30*time.Second))
	defer cancel()
	b, etag, err := p.Source.GetIfChanged(ctx, p.Key, p.etag, desired.MaxDocumentBytes)
	switch {
	case errors.Is(err, store.ErrNotModified):
		p.note("")
		return false, nil
	case errors.Is(err, store.ErrNotFound):
		p.etag = ""
		p.note(fmt.Sprintf("%s does not exist; the host has no document to take until it does", p.URL))
		if rerr := os.Remove(p.Mirror); rerr == nil {
			return true, nil
		} else if !errors.Is(rerr, os.ErrNotExist) {
			return false, rerr
		}
		return false, nil
	case err != nil && parent.Err() != nil:
		// Cut short by the daemon stopping: nothing was learnt of the
		// object, so nothing is said or asked. (The poll's own deadline
		// is an unreachable store, and said.)
		return false, err
	case err != nil:
		// Refused, unreachable or too large: the last good document stays.
		if big := p.tooLarge(ctx); big != nil {
			p.note(big.Error() + "; the host keeps the document it has")
			return false, big
		}
		p.note(fmt.Sprintf("%s cannot be read, so the host keeps the document it has: %v", p.URL, err))
		return false, err
	}
	// The ETag is kept only once the mirror holds the object: a mirror
	// that could not be written is tried again by the next poll, which
	// would otherwise be told "not modified".
	if old, rerr := os.ReadFile(p.Mirror); rerr == nil && bytes.Equal(old, b) {
		p.etag = etag
		p.note("")
		return false, nil
	}
	if err := atomicfile.WriteFile(p.Mirror, b, 0o600); err != nil {
		err = fmt.Errorf("mirror %s to %s: %w", p.URL, p.Mirror, err)
		p.note(fmt.Sprintf("%s was read but could not be written where the daemon reads it, so the host keeps the document it has: %v", p.URL, err))
		return false, err
	}
	p.etag = etag
	p.note("")
	p.logf("fleet: %s changed (etag %s); mirrored to %s", p.URL, etag, p.Mirror)
	return true, nil
}

// Run polls every Interval until ctx ends, at once unless Poll was
// called before.
func (p *Poller) Run(ctx context.Context) error {
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	if !p.polled {
		p.Poll(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		p.Poll(ctx)
	}
}

// tooLarge says whether a read that failed met an object over the limit,
// when the source can tell its size; nil when it was not, or cannot say.
func (p *Poller) tooLarge(ctx context.Context) *TooLargeError {
	s, ok := p.Source.(sizer)
	if !ok {
		return nil
	}
	info, err := s.Stat(ctx, p.Key)
	if err != nil || info.Size <= desired.MaxDocumentBytes {
		return nil
	}
	return &TooLargeError{URL: p.URL, Size: info.Size}
}

// Problem is what kept the last poll from bringing the mirror up to
// date, as a sentence; "" when it did. The daemon reports it.
func (p *Poller) Problem() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// note logs a problem once, and its end once.
func (p *Poller) note(problem string) {
	p.mu.Lock()
	was := p.lastErr
	p.lastErr = problem
	p.mu.Unlock()
	if problem == was {
		return
	}
	if problem == "" {
		p.logf("fleet: %s is readable again", p.URL)
	} else {
		p.logf("fleet: %s", problem)
	}
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}
