package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
)

func start(t *testing.T, w *Watcher) <-chan Document {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Document)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := w.Run(ctx, out); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return out
}

func next(t *testing.T, c <-chan Document) Document {
	t.Helper()
	select {
	case d := <-c:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("no reading within 20s")
		return Document{}
	}
}

func quiet(t *testing.T, c <-chan Document, d time.Duration) {
	t.Helper()
	select {
	case got := <-c:
		t.Fatalf("unexpected reading %q %v", got.Data, got.Err)
	case <-time.After(d):
	}
}

func TestAMissingFileIsReportedThenItsCreationSeen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desired.json")
	c := start(t, &Watcher{Path: path, Debounce: 20 * time.Millisecond})
	if d := next(t, c); d.Err == nil {
		t.Fatalf("missing file read as %q", d.Data)
	}
	os.WriteFile(path, []byte("one"), 0o644)
	if d := next(t, c); string(d.Data) != "one" {
		t.Fatalf("got %q %v", d.Data, d.Err)
	}
}

func TestARenameIntoTheFolderIsSeen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)
	c := start(t, &Watcher{Path: path, Debounce: 20 * time.Millisecond})
	next(t, c)
	tmp := filepath.Join(dir, ".tmp")
	os.WriteFile(tmp, []byte("two"), 0o644)
	os.Rename(tmp, path)
	if d := next(t, c); string(d.Data) != "two" {
		t.Fatalf("got %q %v", d.Data, d.Err)
	}
}

func TestAFileWrittenInChunksIsReadOnceWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desired.json")
	os.WriteFile(path, []byte("x"), 0o644)
	c := start(t, &Watcher{Path: path, Debounce: 500 * time.Millisecond})
	next(t, c)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644)
	for _, chunk := range []string{"ab", "cd", "ef"} {
		f.WriteString(chunk)
		time.Sleep(20 * time.Millisecond)
	}
	f.Close()
	if d := next(t, c); string(d.Data) != "abcdef" {
		t.Fatalf("got %q", d.Data)
	}
	quiet(t, c, 700*time.Millisecond)
}

func TestTheBackstopNeverResendsAnUnchangedDocument(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)
	c := start(t, &Watcher{Path: path, Backstop: 100 * time.Millisecond})
	next(t, c)
	// Unchanged content is not sent again, however often the backstop runs.
	quiet(t, c, 350*time.Millisecond)
}

func TestADeletedFileIsReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)
	c := start(t, &Watcher{Path: path, Debounce: 20 * time.Millisecond})
	next(t, c)
	os.Remove(path)
	if d := next(t, c); d.Err == nil {
		t.Fatal("the deletion was not reported")
	}
}

// writeUnannounced changes path's content through a hard link in another
// folder: the kernel reports that write to watchers of the other folder
// only, so the watched folder hears nothing — the lost event the backstop
// exists for.
func writeUnannounced(t *testing.T, path string, data []byte) {
	t.Helper()
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Link(path, alias); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(alias, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestAChangeNoEventAnnouncedIsReadByTheBackstop(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)

	// With a backstop an hour away, the unannounced write goes unseen:
	// this is what proves no event reached the folder's watch.
	slow := start(t, &Watcher{Path: path, Backstop: time.Hour, Debounce: 20 * time.Millisecond})
	next(t, slow)
	writeUnannounced(t, path, []byte("two"))
	quiet(t, slow, 400*time.Millisecond)

	// A short backstop reads it.
	fast := start(t, &Watcher{Path: path, Backstop: 100 * time.Millisecond, Debounce: 20 * time.Millisecond})
	next(t, fast)
	writeUnannounced(t, path, []byte("three"))
	// The write truncates first, so a backstop read can fall between the
	// two and see the file empty; the next read sees it whole.
	for d := next(t, fast); string(d.Data) != "three"; d = next(t, fast) {
		if len(d.Data) != 0 || d.Err != nil {
			t.Fatalf("got %q %v", d.Data, d.Err)
		}
	}
}

func TestAFileLargerThanADocumentIsReadOnlyAsFarAsDecodeNeedsToRefuseIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desired.json")
	// A 64 MiB file (sparse: it costs no disk).
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d := next(t, start(t, &Watcher{Path: path}))
	if d.Err != nil || len(d.Data) != desired.MaxDocumentBytes+1 {
		t.Fatalf("read %d bytes (%v), want %d", len(d.Data), d.Err, desired.MaxDocumentBytes+1)
	}
	_, err = desired.Decode(d.Data)
	if rs := desired.Reasons(err); len(rs) != 1 || rs[0].Rule != desired.TooLarge() {
		t.Fatalf("Decode said %v, want the too-large rule", err)
	}
}

func TestWithRewritesTheSameDocumentWrittenAgainIsSentAgain(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)
	c := start(t, &Watcher{Path: path, Debounce: 20 * time.Millisecond, Backstop: 100 * time.Millisecond, Rewrites: true})
	next(t, c)
	tmp := filepath.Join(dir, ".tmp")
	os.WriteFile(tmp, []byte("one"), 0o644)
	os.Rename(tmp, path)
	if d := next(t, c); string(d.Data) != "one" {
		t.Fatalf("got %q %v", d.Data, d.Err)
	}
	// The backstop still never resends it.
	quiet(t, c, 350*time.Millisecond)
}

func TestWithoutRewritesTheSameDocumentWrittenAgainIsNotSent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "desired.json")
	os.WriteFile(path, []byte("one"), 0o644)
	c := start(t, &Watcher{Path: path, Debounce: 20 * time.Millisecond})
	next(t, c)
	os.WriteFile(path, []byte("one"), 0o644)
	quiet(t, c, 300*time.Millisecond)
}
