package fleet

import (
	"context"
	"encoding/json"
	"time"

	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/watch"
)

// Putter stores a small object in one request (*store.S3 is one).
type Putter interface {
	PutSmall(ctx context.Context, key string, b []byte, contentType string) error
}

// Upload defaults.
const (
	// DefaultHeartbeat is the longest a report that says nothing new
	// waits: a reader sees reportedAt at most this old on a live host.
	DefaultHeartbeat = 60 * time.Second
	// DefaultMinGap is the shortest time between two puts.
	DefaultMinGap = time.Second
)

// Uploader puts the daemon's reported.json to one object.
type Uploader struct {
	Dest Putter
	Key  string
	// URL names the object in log lines.
	URL string
	// Report is the reported.json the daemon writes.
	Report    string
	Heartbeat time.Duration
	MinGap    time.Duration
	Logf      func(format string, args ...any)
}

// NextPut is when the latest report should go up, given the last one put
// (nil: none yet) and when. A report that says something new — a state
// change, a message, a new document: anything control.Diff sees — goes up
// at once, no sooner than minGap after the last put; one that only
// refreshes measurements and reportedAt waits for the heartbeat. It is
// pure, so the rule is tested without a clock.
func NextPut(put *reported.HostReportedState, putAt time.Time, latest *reported.HostReportedState, heartbeat, minGap time.Duration) time.Time {
	if put == nil {
		return putAt // nothing is up yet: now
	}
	if len(control.Diff(put, latest)) > 0 {
		return putAt.Add(minGap)
	}
	return putAt.Add(heartbeat)
}

// Run watches the report and puts it until ctx ends. A failed put is
// retried (at the minimum gap, doubling up to the heartbeat) with the
// latest report.
func (u *Uploader) Run(ctx context.Context) error {
	heartbeat, minGap := u.Heartbeat, u.MinGap
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	if minGap <= 0 {
		minGap = DefaultMinGap
	}
	docs := make(chan watch.Document)
	w := &watch.Watcher{Path: u.Report, Debounce: 50 * time.Millisecond}
	errc := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { errc <- w.Run(wctx, docs) }()

	var (
		latest   []byte
		parsed   *reported.HostReportedState
		put      *reported.HostReportedState
		putAt    time.Time
		retry    time.Duration
		lastErr  string
		timer    = time.NewTimer(time.Hour)
		pending  bool
		schedule = func(at time.Time) {
			timer.Stop()
			timer.Reset(max(time.Until(at), 0))
			pending = true
		}
	)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errc:
			return err
		case d := <-docs:
			var r reported.HostReportedState
			if d.Err != nil || json.Unmarshal(d.Data, &r) != nil {
				continue // not written yet, or half a file: the next write replaces it
			}
			latest, parsed = d.Data, &r
			if retry == 0 {
				schedule(NextPut(put, putAt, parsed, heartbeat, minGap))
			}
		case <-timer.C:
			if !pending || latest == nil {
				continue
			}
			pending = false
			pctx, pcancel := context.WithTimeout(ctx, 30*time.Second)
			err := u.Dest.PutSmall(pctx, u.Key, latest, "application/json")
			pcancel()
			if err != nil {
				retry = min(max(2*retry, minGap), heartbeat)
				if msg := err.Error(); msg != lastErr {
					u.logf("fleet: the report could not be put to %s (retrying every %s at most): %v", u.URL, retry, err)
					lastErr = msg
				}
				schedule(time.Now().Add(retry))
				continue
			}
			if lastErr != "" {
				u.logf("fleet: the report reaches %s again", u.URL)
				lastErr = ""
			}
			put, putAt, retry = parsed, time.Now(), 0
			schedule(NextPut(put, putAt, parsed, heartbeat, minGap))
		}
	}
}

func (u *Uploader) logf(format string, args ...any) {
	if u.Logf != nil {
		u.Logf(format, args...)
	}
}
