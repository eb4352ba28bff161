package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/watch"
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

// Poller reads one desired.json object and hands the daemon each reading
// (it is a daemon.Source): the object when it changed, that it does not
// exist, or, when it cannot be read, only why (Document.Problem), so the
// host keeps the document it has and its report says why.
type Poller struct {
	Source Getter
	Key    string
	// URL names the object in log lines and problems.
	URL string
	// Copy, when set, is a file the last object read is written to, for
	// readers other than the daemon (the control socket's status reads an
	// app's volume and exports from it). The daemon never reads it.
	Copy string
	// Interval is the time between two polls.
	Interval time.Duration
	// Logf logs a line when what the poll finds changes (default: none).
	Logf func(format string, args ...any)

	etag    string
	polled  bool
	missing bool

	mu      sync.Mutex
	lastErr string
}

// Poll asks once and says what the daemon is to be handed, if anything:
// the object when it was read, a missing document once it is gone, a
// problem when the object cannot be read (and once more when it can be
// again, with none). ok is false when there is nothing new to say. err is
// the read's failure, when there was one.
func (p *Poller) Poll(parent context.Context) (doc watch.Document, ok bool, err error) {
	p.polled = true
	ctx, cancel := context.WithTimeout(parent, min(max(p.Interval, 5*time.Second), 30*time.Second))
	defer cancel()
	b, etag, err := p.Source.GetIfChanged(ctx, p.Key, p.etag, desired.MaxDocumentBytes)
	switch {
	case errors.Is(err, store.ErrNotModified):
		return watch.Document{}, p.note(""), nil
	case errors.Is(err, store.ErrNotFound):
		p.etag = ""
		problem := fmt.Sprintf("%s does not exist; the host has no document to take until it does", p.URL)
		changed := p.note(problem)
		if p.missing && !changed {
			return watch.Document{}, false, nil
		}
		p.missing = true
		return watch.Document{Err: fmt.Errorf("%s %w", p.URL, watch.ErrMissing), Problem: problem}, true, nil
	case err != nil && parent.Err() != nil:
		// Cut short by the daemon stopping: nothing was learnt of the
		// object, so nothing is said or asked. (The poll's own deadline
		// is an unreachable store, and said.)
		return watch.Document{}, false, err
	case err != nil:
		// Refused, unreachable or too large: the last good document stays.
		problem := fmt.Sprintf("%s cannot be read, so the host keeps the document it has: %v", p.URL, err)
		if big := p.tooLarge(ctx); big != nil {
			problem, err = big.Error()+"; the host keeps the document it has", big
		}
		return watch.Document{Problem: problem}, p.note(problem), err
	}
	if b == nil {
		b = []byte{} // an empty object is a reading, which Decode refuses
	}
	p.etag, p.missing = etag, false
	p.note("")
	p.logf("fleet: %s changed (etag %s)", p.URL, etag)
	if p.Copy != "" {
		if err := atomicfile.WriteFile(p.Copy, b, 0o600); err != nil {
			p.logf("fleet: keep a copy of %s in %s: %v", p.URL, p.Copy, err)
		}
	}
	return watch.Document{Data: b}, true, nil
}

// Run polls at once unless Poll was called before, then every Interval
// until ctx ends, sending out what each poll has to say.
func (p *Poller) Run(ctx context.Context, out chan<- watch.Document) error {
	tick := time.NewTicker(p.Interval)
	defer tick.Stop()
	send := func() bool {
		doc, ok, _ := p.Poll(ctx)
		if !ok {
			return true
		}
		select {
		case out <- doc:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !p.polled && !send() {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if !send() {
			return nil
		}
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

// Problem is what kept the last poll from reading the object, as a
// sentence; "" when it did.
func (p *Poller) Problem() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// note logs a problem once, and its end once, and says whether it changed.
func (p *Poller) note(problem string) bool {
	p.mu.Lock()
	was := p.lastErr
	p.lastErr = problem
	p.mu.Unlock()
	if problem == was {
		return false
	}
	if problem == "" {
		p.logf("fleet: %s is readable again", p.URL)
	} else {
		p.logf("fleet: %s", problem)
	}
	return true
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}
