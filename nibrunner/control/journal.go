package control

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/watch"
)

// DefaultJournalSize is how many events a journal keeps.
const DefaultJournalSize = 1024

// Journal keeps the last events of one daemon run, derived from each
// report it is shown, in a bounded ring; followers wait on it for more.
type Journal struct {
	mu     sync.Mutex
	size   int
	events []Event // oldest first, at most size
	seq    uint64
	prev   *reported.HostReportedState
	more   chan struct{} // closed when an event is added
	// last is each app's last state change, so a start that ends a wake
	// (idle → starting → running) reads "woke".
	last map[string]Verb
}

// NewJournal keeps up to size events (DefaultJournalSize when size ≤ 0).
func NewJournal(size int) *Journal {
	if size <= 0 {
		size = DefaultJournalSize
	}
	return &Journal{size: size, more: make(chan struct{}), last: map[string]Verb{}}
}

// FollowReports is a journal of the reports written at path (none when
// path is ""): see Watch.
func FollowReports(ctx context.Context, path string) *Journal {
	return NewJournal(0).Watch(ctx, path)
}

// Watch has j observe the reports written at path (none when path is ""),
// and returns j: what is on disk now is the baseline, taken before anyone
// can ask, and each report after it is observed until ctx ends.
func (j *Journal) Watch(ctx context.Context, path string) *Journal {
	if path != "" {
		j.Baseline(ReadReport(path))
		go j.Follow(ctx, path)
	}
	return j
}

// Restore keeps evs (oldest first), events an earlier run of the daemon
// recorded, as the journal's first: new ones are numbered after them.
// Call it before the journal is shown a report.
func (j *Journal) Restore(evs []Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, e := range evs {
		if e.Seq <= j.seq {
			continue
		}
		j.seq = e.Seq
		j.events = append(j.events, e)
		if e.Subject == SubjectInstance && e.From != "" && e.To != "" {
			j.last[e.ID] = e.Verb
		}
	}
	if over := len(j.events) - j.size; over > 0 {
		j.events = append(j.events[:0:0], j.events[over:]...)
	}
}

// Size is the most events the journal keeps.
func (j *Journal) Size() int { return j.size }

// Baseline sets the report later ones are compared with, without an event:
// what a report on disk says happened before this daemon ran.
func (j *Journal) Baseline(r *reported.HostReportedState) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.prev = r
}

// Observe records what changed since the last report it was shown.
func (j *Journal) Observe(r *reported.HostReportedState) {
	j.mu.Lock()
	defer j.mu.Unlock()
	evs := Diff(j.prev, r)
	j.prev = r
	if len(evs) == 0 {
		return
	}
	for _, e := range evs {
		if e.Subject == SubjectInstance && e.From != "" && e.To != "" {
			if e.Verb == VerbStarted && j.last[e.ID] == VerbWaking {
				e.Verb = VerbWoke
			}
			j.last[e.ID] = e.Verb
		}
		j.add(e)
	}
	j.more = wake(j.more)
}

// Record adds an event that no report shows (an exec session).
func (j *Journal) Record(e Event) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.add(e)
	j.more = wake(j.more)
}

// add numbers e and keeps it, dropping the oldest beyond the ring's size
// (mu held).
func (j *Journal) add(e Event) {
	j.seq++
	e.Seq = j.seq
	j.events = append(j.events, e)
	if over := len(j.events) - j.size; over > 0 {
		j.events = append(j.events[:0:0], j.events[over:]...)
	}
}

// wake closes a followers' channel and makes the next.
func wake(more chan struct{}) chan struct{} {
	close(more)
	return make(chan struct{})
}

// After returns the kept events numbered above seq, and a channel closed
// when there are more.
func (j *Journal) After(seq uint64) ([]Event, <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Event
	for _, e := range j.events {
		if e.Seq > seq {
			out = append(out, e)
		}
	}
	return out, j.more
}

// Follow shows the journal the report at path each time the file
// changes, until ctx ends. An unreadable one is skipped (the daemon's next
// write replaces it).
func (j *Journal) Follow(ctx context.Context, path string) error {
	docs := make(chan watch.Document)
	// The daemon renames each report into place whole, so there is nothing
	// to wait for; a longer debounce would let a run of quick passes hide
	// the states between them.
	w := &watch.Watcher{Path: path, Debounce: time.Millisecond}
	errc := make(chan error, 1)
	go func() { errc <- w.Run(ctx, docs) }()
	for {
		select {
		case <-ctx.Done():
			return <-errc
		case err := <-errc:
			return err
		case d := <-docs:
			if r := decodeReport(d.Data, d.Err); r != nil {
				j.Observe(r)
			}
		}
	}
}

// ReadReport reads the report at path, or nil when there is none or it
// cannot be read.
func ReadReport(path string) *reported.HostReportedState {
	b, err := os.ReadFile(path)
	return decodeReport(b, err)
}

func decodeReport(b []byte, err error) *reported.HostReportedState {
	var r reported.HostReportedState
	if err != nil || json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}
