package control

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// EventStore keeps events across the daemon's restarts (nibrunner/db's
// events table): each one's JSON by its number.
type EventStore interface {
	AppendEvents(ctx context.Context, evs map[uint64][]byte, keep int) error
	Events(ctx context.Context) ([][]byte, error)
}

// RestoreFrom gives j the events s kept from earlier runs. An event that
// no longer decodes is skipped.
func (j *Journal) RestoreFrom(ctx context.Context, s EventStore) error {
	raw, err := s.Events(ctx)
	if err != nil {
		return fmt.Errorf("restore the events: %w", err)
	}
	evs := make([]Event, 0, len(raw))
	for _, b := range raw {
		var e Event
		if json.Unmarshal(b, &e) == nil && e.Seq > 0 {
			evs = append(evs, e)
		}
	}
	j.Restore(evs)
	return nil
}

// Seq is the number of the last event recorded (0 before any).
func (j *Journal) Seq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// KeepIn writes each event of j numbered above from to s (those s has
// not: from is Seq after RestoreFrom), as many as j keeps, until ctx ends,
// and tells wrote after each write: the last event number written, or the
// error. A failed write is tried again with the next event; the journal in
// memory stays whole.
func (j *Journal) KeepIn(ctx context.Context, s EventStore, from uint64, wrote func(seq uint64, err error)) {
	last := from
	pending := map[uint64][]byte{}
	flush := func(ctx context.Context) {
		evs, _ := j.After(last)
		for _, e := range evs {
			b, err := json.Marshal(e)
			if err != nil {
				continue
			}
			pending[e.Seq] = b
			last = e.Seq
		}
		if len(pending) == 0 {
			return
		}
		if err := s.AppendEvents(ctx, pending, j.size); err != nil {
			wrote(0, err)
		} else {
			clear(pending)
			wrote(last, nil)
		}
		// Bounded: what a failing store holds back is at most the ring.
		for seq := range pending {
			if seq+uint64(j.size) <= last {
				delete(pending, seq)
			}
		}
	}
	for {
		_, more := j.After(last)
		flush(ctx)
		select {
		case <-more:
		case <-ctx.Done():
			// What was recorded as the daemon stopped is kept too.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			flush(fctx)
			cancel()
			return
		}
	}
}
