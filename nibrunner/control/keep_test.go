package control

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/db"
)

// Events outlive the daemon: a journal keeps what it records in the state
// database, the next run's journal starts from them and numbers after
// them, and the database holds no more than the journal does.
func TestEventsAreKeptAcrossARestartWithinTheJournalsSize(t *testing.T) {
	ctx := context.Background()
	store, err := db.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// run records n events in j while it keeps them in store, and returns
	// once store holds the last.
	run := func(j *Journal, n int, who string) {
		t.Helper()
		from := j.Seq()
		kctx, cancel := context.WithCancel(ctx)
		wrote := make(chan uint64, 16)
		done := make(chan struct{})
		go func() {
			defer close(done)
			j.KeepIn(kctx, store, from, func(seq uint64, err error) {
				if err != nil {
					t.Error(err)
				}
				wrote <- seq
			})
		}()
		var last uint64
		for range n {
			j.Record(Event{At: time.Unix(1, 0).UTC(), Subject: SubjectExec, ID: who, Verb: VerbExec})
		}
		evs, _ := j.After(0)
		last = evs[len(evs)-1].Seq
		for seq := range wrote {
			if seq == last {
				break
			}
		}
		cancel()
		<-done
	}
	first := NewJournal(3)
	run(first, 5, "first")

	second := NewJournal(3)
	if err := second.RestoreFrom(ctx, store); err != nil {
		t.Fatal(err)
	}
	evs, _ := second.After(0)
	if len(evs) != 3 || evs[0].Seq != 3 || evs[2].Seq != 5 || evs[2].ID != "first" {
		t.Fatalf("restored %+v, want the first run's last 3 (seq 3–5)", evs)
	}
	run(second, 1, "second")
	evs, _ = second.After(0)
	if last := evs[len(evs)-1]; last.Seq != 6 || last.ID != "second" {
		t.Fatalf("the next run's event is %+v, want seq 6", last)
	}
	raw, err := store.Events(ctx)
	if err != nil || len(raw) != 3 {
		t.Fatalf("the database keeps %d events (%v), want the journal's 3", len(raw), err)
	}
}
