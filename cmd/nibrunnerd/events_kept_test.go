package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/control"
)

// Events outlive serve (issue 39: they were lost on restart): what the
// first serve recorded, the next one shows, numbering its own after them.
func TestEventsAreKeptAcrossARestartOfServe(t *testing.T) {
	_, cfgPath, _, _, app := fakeHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfgPath, "fake", 0, false) }()
	awaitServe(t, cfgPath, 30*time.Second)
	evs := followEvents(t, cfgPath)
	started := waitEvent(t, evs, app, control.VerbStarted, 60*time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	serveInBackground(t, cfgPath, "fake")
	awaitServe(t, cfgPath, 30*time.Second)
	out, err := ctl("events", "--output", "json", "--config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var kept *control.Event
	var last uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e control.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		if e.Seq <= last {
			t.Fatalf("events out of order after the restart: %d after %d\n%s", e.Seq, last, out)
		}
		last = e.Seq
		if e.Seq == started.Seq {
			kept = &e
		}
	}
	if kept == nil || kept.ID != app || kept.Verb != control.VerbStarted || !kept.At.Equal(started.At) {
		t.Fatalf("the restarted serve does not show the first one's event %d (%s started):\n%s", started.Seq, app, out)
	}
}
