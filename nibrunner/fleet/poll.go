package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/store"
)

// Getter reads an object unless its ETag is still the one held
// (*store.S3 is one).
type Getter interface {
	GetIfChanged(ctx context.Context, key, etag string, limit int64) ([]byte, string, error)
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

	etag    string
	lastErr string
	polled  bool
}

// Poll asks once and brings the mirror up to date. It says whether the
// mirror changed.
func (p *Poller) Poll(ctx context.Context) (bool, error) {
	p.polled = true
	ctx, cancel := context.WithTimeout(ctx, min(max(p.Interval, 5*time.Second), 30*time.Second))
	defer cancel()
	b, etag, err := p.Source.GetIfChanged(ctx, p.Key, p.etag, MaxDocument)
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
	case err != nil:
		// Refused or unreachable: the last good document stays.
		p.note(fmt.Sprintf("%s cannot be read, so the host keeps the document it has: %v", p.URL, err))
		return false, err
	}
	p.etag = etag
	p.note("")
	if old, rerr := os.ReadFile(p.Mirror); rerr == nil && bytes.Equal(old, b) {
		return false, nil
	}
	if err := atomicfile.WriteFile(p.Mirror, b, 0o600); err != nil {
		return false, fmt.Errorf("mirror %s: %w", p.URL, err)
	}
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

// note logs a problem once, and its end once.
func (p *Poller) note(problem string) {
	if problem == p.lastErr {
		return
	}
	if problem == "" {
		p.logf("fleet: %s is readable again", p.URL)
	} else {
		p.logf("fleet: %s", problem)
	}
	p.lastErr = problem
}

func (p *Poller) logf(format string, args ...any) {
	if p.Logf != nil {
		p.Logf(format, args...)
	}
}
