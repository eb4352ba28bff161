package registrycopy

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// here is the layout this code writes, with a wait long enough for any
// test (a run that waits that long has hung).
var here = layout{schema: schemaVersion, wait: time.Minute}

// The damage verdict is taken outside the lock, the discard inside it:
// run B, which saw the same damaged file as run A, discards A's new copy.
func TestARunThatFoundTheFileDamagedDoesNotDiscardTheCopyAnotherRunRebuilt(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("this is not a SQLite database, not even close to one......................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errA := Open(ctx, dir) // run A: damaged
	_, errB := Open(ctx, dir) // run B: damaged, same file
	if !damaged(errA) || !damaged(errB) {
		t.Fatalf("want both damaged: %v / %v", errA, errB)
	}
	a, why, err := discardAndOpen(ctx, dir, here, io.Discard) // A rebuilds...
	if err != nil || why == nil {
		t.Fatalf("run A: %v, damage %v; want the damaged file discarded", err, why)
	}
	defer a.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '7' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	b, why, err := discardAndOpen(ctx, dir, here, io.Discard) // ...and B must open it, not discard it
	if err != nil || why != nil {
		t.Fatalf("run B: %v, damage %v; want A's copy opened", err, why)
	}
	defer b.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '9' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, _ := c.Version(ctx)
	if v != 9 {
		t.Fatalf("the copy on disk is at version %d; run A wrote 9 to a file run B deleted", v)
	}
}

// newer is a run of an alp whose copies have another layout: to it, this
// code's copy is not a copy, and it discards it.
var newer = layout{schema: schemaVersion + 1}

func TestARunOfAnotherVersionDoesNotDiscardTheCopyARunHasOpen(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '7' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	b, why, err := discardAndOpen(ctx, dir, newer, io.Discard) // no wait: give up at once
	if err == nil {
		b.Close()
		t.Fatalf("the newer run discarded the copy run A has open (damage %v) and made its own", why)
	}
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) || !strings.Contains(err.Error(), "let that run finish") {
		t.Fatalf("the newer run's error %q, want ErrInUse naming the file and saying what to do", err)
	}
	// A's writes still reach the file at the copy's path.
	if _, err := a.db.Exec(`UPDATE meta SET value = '9' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	c, err := openShared(ctx, dir, layout{schema: schemaVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, _ := c.Version(ctx); v != 9 {
		t.Fatalf("the copy at %s is at version %d, want the 9 run A wrote", c.Path(), v)
	}
}

func TestARunOfAnotherVersionDiscardsTheCopyOnceTheRunUsingItClosesIt(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	a, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	waiting := &bell{word: "waiting", rung: make(chan struct{})}
	type result struct {
		c   *Copy
		why error
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, why, err := discardAndOpen(ctx, dir, layout{schema: newer.schema, wait: time.Minute}, waiting)
		done <- result{c, why, err}
	}()
	select {
	case <-waiting.rung:
	case r := <-done:
		t.Fatalf("the newer run finished (%v, damage %v) while run A still had the copy open", r.err, r.why)
	}
	a.Close()
	r := <-done
	if r.err != nil || !errors.Is(r.why, errSchema) {
		t.Fatalf("the newer run: %v, damage %v; want the old layout discarded", r.err, r.why)
	}
	defer r.c.Close()
	var schema string
	if err := r.c.db.QueryRow(`SELECT value FROM meta WHERE name = 'schema'`).Scan(&schema); err != nil || schema != "2" {
		t.Fatalf("the copy after the discard has schema %q (%v), want the newer run's 2", schema, err)
	}
}

func TestTwoRunsHoldTheCopyOpenAtOnce(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	now := layout{schema: schemaVersion} // no wait: a lock held by the other fails at once
	a, err := openShared(ctx, dir, now)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := openShared(ctx, dir, now)
	if err != nil {
		t.Fatalf("a second run could not open the copy the first has open: %v", err)
	}
	defer b.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '3' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	if v, err := b.Version(ctx); err != nil || v != 3 {
		t.Fatalf("the second run reads version %d (%v), want the 3 the first wrote", v, err)
	}
}

func TestAWaitForTheLockEndsWithItsContext(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithCancel(t.Context())
	waiting := &bell{word: "waiting", rung: make(chan struct{}), then: cancel}
	_, _, err = discardAndOpen(ctx, dir, layout{schema: newer.schema, wait: time.Hour}, waiting)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), filepath.Join(dir, FileName)) {
		t.Fatalf("a discard waiting on a cancelled context: %v, want context.Canceled naming the file", err)
	}
}

// bell is a log that rings (closes rung, then calls then) the first time
// a line with word is written to it.
type bell struct {
	word string
	rung chan struct{}
	then func()
	once sync.Once
}

func (b *bell) Write(p []byte) (int, error) {
	if strings.Contains(string(p), b.word) {
		b.once.Do(func() {
			close(b.rung)
			if b.then != nil {
				b.then()
			}
		})
	}
	return len(p), nil
}

// Every wait for another run (a lock, a discard) goes through retry.
func TestRetryEndsWithTriesErrorItsTimeOutOrItsContext(t *testing.T) {
	timedOut := errors.New("timed out")
	out := func() error { return timedOut }
	cancelled := func(err error) error { return errors.Join(errors.New("cancelled"), err) }
	tries := 0
	broken := errors.New("broken")
	err := retry(context.Background(), time.Hour, func() (bool, error) { tries++; return false, broken }, out, cancelled)
	if err != broken || tries != 1 {
		t.Errorf("a try that fails: %v after %d tries, want its own error after one", err, tries)
	}
	tries = 0
	err = retry(context.Background(), time.Hour, func() (bool, error) { tries++; return tries == 3, nil }, out, cancelled)
	if err != nil || tries != 3 {
		t.Errorf("a try done the third time: %v after %d tries", err, tries)
	}
	tries = 0
	err = retry(context.Background(), 0, func() (bool, error) { tries++; return false, nil }, out, cancelled)
	if err != timedOut || tries != 1 {
		t.Errorf("no time to wait: %v after %d tries, want the time-out after one", err, tries)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = retry(ctx, time.Hour, func() (bool, error) { return false, nil }, out, cancelled)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("an ended context: %v, want cancelled's error wrapping context.Canceled", err)
	}
}
