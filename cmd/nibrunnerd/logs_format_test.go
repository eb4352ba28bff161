package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/reported"
)

// Each app's state change is one record with its reason, in the format
// asked for (issue 39: the daemon's log never said an app slept or why).
func TestEachAppLifecycleChangeIsOneRecordWithItsReason(t *testing.T) {
	h, err := logHandler("json", nil)
	if err != nil || h == nil {
		t.Fatalf("json: %v", err)
	}
	b := newSyncBuffer()
	j := control.NewJournal(0)
	j.Record(control.Event{Subject: control.SubjectInstance, ID: "old", Verb: control.VerbStarted}) // before from: not logged
	from := j.Seq()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); logLifecycle(ctx, j, from, slog.New(slog.NewJSONHandler(b, nil))) }()
	j.Record(control.Event{Subject: control.SubjectVolume, ID: "web-data", Verb: "ready"})
	j.Record(control.Event{Subject: control.SubjectInstance, ID: "web", Verb: control.VerbSlept, From: "running", To: "idle", Message: "idle for 5m0s"})
	j.Record(control.Event{Subject: control.SubjectInstance, ID: "api", Verb: control.VerbFailed, From: "starting", To: "failed", Message: "exited 1"})
	for !strings.Contains(b.String(), `"app":"api"`) {
		<-b.wrote
	}
	cancel()
	<-done
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want the two apps' records only:\n%s", b.String())
	}
	var slept, failed map[string]any
	json.Unmarshal([]byte(lines[0]), &slept)
	json.Unmarshal([]byte(lines[1]), &failed)
	if slept["msg"] != "app slept" || slept["app"] != "web" || slept["reason"] != "idle for 5m0s" || slept["to"] != "idle" || slept["level"] != "INFO" {
		t.Errorf("slept: %v", slept)
	}
	if failed["msg"] != "app failed" || failed["level"] != "WARN" || failed["reason"] != "exited 1" {
		t.Errorf("failed: %v", failed)
	}
	if _, err := logHandler("yaml", nil); err == nil || !strings.Contains(err.Error(), "choose plain, text or json") {
		t.Errorf("yaml: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader,
// which signals each write on wrote.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{wrote: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	n, err := b.buf.Write(p)
	b.mu.Unlock()
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return n, err
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A volume being made says how it is getting on in the log every few
// seconds, as reported.json says it (issue 39: a seed was silent until
// it was ready); a ready or deleted volume says nothing.
func TestAVolumeAtWorkSaysHowItIsGettingOnInTheLogEveryFewSeconds(t *testing.T) {
	var mu sync.Mutex
	report := &reported.HostReportedState{Volumes: []reported.Volume{
		{VolumeId: "web-data", AppId: "web", State: reported.VolumePending, Message: "being made (for 5s): fetching the archive, 12 MiB of 100 MiB (12%)"},
		{VolumeId: "api-data", AppId: "api", State: reported.VolumeReady},
		{VolumeId: "old-data", AppId: "old", State: reported.VolumeDeleted, Message: "being deleted (for 1s)"},
	}}
	read := func() *reported.HostReportedState {
		mu.Lock()
		defer mu.Unlock()
		r := *report
		return &r
	}
	clk := clock.NewManual(time.Unix(0, 0))
	b := newSyncBuffer()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	armed := clk.Armed()
	go func() {
		defer close(done)
		logVolumeWork(ctx, clk, 5*time.Second, read, slog.New(slog.NewJSONHandler(b, nil)))
	}()
	<-armed
	armed = clk.Armed()
	clk.Advance(5 * time.Second)
	for !strings.Contains(b.String(), "12 MiB of 100 MiB") {
		<-b.wrote
	}
	<-armed // the next line is timed
	mu.Lock()
	report.Volumes[0] = reported.Volume{VolumeId: "web-data", AppId: "web", State: reported.VolumeReady}
	mu.Unlock()
	armed = clk.Armed()
	clk.Advance(5 * time.Second)
	<-armed // the round after the volume became ready has run
	cancel()
	<-done
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line, of web-data being made:\n%s", b.String())
	}
	var rec map[string]any
	json.Unmarshal([]byte(lines[0]), &rec)
	if rec["msg"] != "volume at work" || rec["volume"] != "web-data" || rec["app"] != "web" || !strings.HasPrefix(rec["progress"].(string), "being made (for 5s): fetching the archive") {
		t.Errorf("the line: %v", rec)
	}
}
