package daemon

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/watch"
)

// fullDisk is a state database whose writes of the accepted document fail
// while full is set, as SQLite's do on a full disk.
type fullDisk struct {
	full   atomic.Bool
	tries  atomic.Int32
	record func(context.Context, db.Accepted) error
}

func (f *fullDisk) SetAccepted(ctx context.Context, a db.Accepted) error {
	f.tries.Add(1)
	if f.full.Load() {
		return errors.New("record the accepted document: database or disk is full (13)")
	}
	return f.record(ctx, a)
}

func failingRecorder(d *Daemon) *fullDisk {
	f := &fullDisk{record: d.acc.record}
	f.full.Store(true)
	d.acc.record = f.SetAccepted
	return f
}

func TestADocumentThatCouldNotBeRecordedIsRecordedByTheNextPass(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(true)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := Open(ctx, h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	disk := failingRecorder(d)
	digest := h.write(t, doc(h.app("a", "a1")))
	raw := readFile(t, h.desiredPath())

	if err := d.Offer(ctx, watch.Document{Data: raw}); err == nil {
		t.Fatal("a document that could not be recorded was not refused")
	}
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	r := h.readReport(t)
	if !strings.Contains(r.Message, "could not be recorded") || !strings.Contains(r.Message, "disk is full") {
		t.Fatalf("the report does not say the document could not be recorded: %q", r.Message)
	}
	if r.AcceptedDigest != "" {
		t.Fatalf("a document that was not recorded is in force: %s", r.AcceptedDigest)
	}
	before := disk.tries.Load()
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if disk.tries.Load() == before {
		t.Fatal("the pass did not try to record the document again")
	}

	disk.full.Store(false) // space is back
	if err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	r = h.readReport(t)
	if string(r.AcceptedDigest) != digest || r.Message != "" {
		t.Fatalf("after space came back the pass did not take the document: digest %q, message %q", r.AcceptedDigest, r.Message)
	}
	got, ok, err := d.db.Accepted(ctx)
	if err != nil || !ok || got.Digest != digest {
		t.Fatalf("the document is not in the database: %v %v %+v", ok, err, got.Digest)
	}
}

func TestADocumentThatCouldNotBeRecordedIsRecordedWhenTheFileIsWrittenAgain(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(true)
	if err != nil {
		t.Fatal(err)
	}
	cfg := h.config()
	cfg.Resync = 1 << 40 // no pass but the ones the file asks for
	d, err := Open(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	disk := failingRecorder(d)
	h.watch(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done; d.Close() }()

	digest := h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "the document refused for want of space", func(r *reported.HostReportedState) bool {
		return strings.Contains(r.Message, "could not be recorded")
	})
	disk.full.Store(false)
	tries := disk.tries.Load()
	// The same bytes, written again: the watcher sends them, and the
	// daemon records them.
	h.writeRaw(t, readFile(t, h.desiredPath()))
	h.waitFor(t, "the document taken once the file was written again", func(r *reported.HostReportedState) bool {
		return string(r.AcceptedDigest) == digest && r.Message == ""
	})
	if disk.tries.Load() == tries {
		t.Fatal("the document was not recorded again")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
