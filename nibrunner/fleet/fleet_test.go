package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/watch"
)

// bucket is one object that can be changed, deleted or made unreachable.
type bucket struct {
	data  []byte
	etag  string
	fail  error
	gets  int
	bodys int // gets that carried the body
}

func (b *bucket) GetIfChanged(_ context.Context, key, etag string, limit int64) ([]byte, string, error) {
	b.gets++
	switch {
	case b.fail != nil:
		return nil, "", b.fail
	case b.data == nil:
		return nil, "", fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	case etag == b.etag:
		return nil, etag, fmt.Errorf("get %s: %w", key, store.ErrNotModified)
	case int64(len(b.data)) > limit:
		// As *store.S3 refuses it, in words of its own.
		return nil, "", fmt.Errorf("get %q: the object is %d bytes; at most %d are read", key, len(b.data), limit)
	}
	b.bodys++
	return b.data, b.etag, nil
}

func (b *bucket) Stat(_ context.Context, key string) (store.Info, error) {
	switch {
	case b.fail != nil:
		return store.Info{}, b.fail
	case b.data == nil:
		return store.Info{}, fmt.Errorf("stat %s: %w", key, store.ErrNotFound)
	}
	return store.Info{Key: key, Size: int64(len(b.data))}, nil
}

func (b *bucket) set(s string) { b.data, b.etag = []byte(s), fmt.Sprintf("e%d", len(s)) }

// reads checks what one poll hands the daemon: want is the document's
// data, "" for none; problem what it says of the source; missing whether
// it says there is no document.
func reads(t *testing.T, p *Poller, wantOK bool, want, problem string, missing bool) {
	t.Helper()
	doc, ok, _ := p.Poll(context.Background())
	if ok != wantOK {
		t.Fatalf("the poll handed the daemon something: %v (%+v), want %v", ok, doc, wantOK)
	}
	if !ok {
		return
	}
	if string(doc.Data) != want || (want == "") != (doc.Data == nil) || doc.Problem != problem || errors.Is(doc.Err, watch.ErrMissing) != missing {
		t.Fatalf("the poll handed %q (err %v, problem %q); want %q, problem %q, missing %v", doc.Data, doc.Err, doc.Problem, want, problem, missing)
	}
}

// pollerOfOne is a poller of the object s3://fleet/h1/desired.json, which
// holds doc, keeping a copy in a fresh folder, and what it logged.
func pollerOfOne(t *testing.T, doc string) (*bucket, *Poller, *[]string) {
	t.Helper()
	b := &bucket{}
	b.set(doc)
	logged := &[]string{}
	p := &Poller{Source: b, Key: "h1/desired.json", URL: "s3://fleet/h1/desired.json", Copy: filepath.Join(t.TempDir(), CopyName), Interval: time.Second,
		Logf: func(f string, a ...any) { *logged = append(*logged, fmt.Sprintf(f, a...)) }}
	return b, p, logged
}

func TestThePollerHandsOverTheObjectAndOnlyWhyWhenItCannotBeRead(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	reads(t, p, true, `{"v":1}`, "", false)
	if got, err := os.ReadFile(p.Copy); string(got) != `{"v":1}` {
		t.Fatalf("the copy holds %q (%v)", got, err)
	}
	// Unchanged: a conditional GET answered with no body, and nothing to
	// hand over.
	for range 3 {
		reads(t, p, false, "", "", false)
	}
	if b.gets != 4 || b.bodys != 1 {
		t.Fatalf("%d gets, %d with a body; want 4 and 1", b.gets, b.bodys)
	}
	// Refused or unreachable: only why, once; the host keeps its document.
	b.fail = errors.New("403 AccessDenied")
	const denied = "s3://fleet/h1/desired.json cannot be read, so the host keeps the document it has: 403 AccessDenied"
	reads(t, p, true, "", denied, false)
	reads(t, p, false, "", "", false)
	// Readable again and unchanged: that the problem is gone.
	b.fail = nil
	reads(t, p, true, "", "", false)
	b.set(`{"v":22}`)
	reads(t, p, true, `{"v":22}`, "", false)
	// Deleted: the host has no document, as with a deleted local file,
	// said once.
	b.data = nil
	const gone = "s3://fleet/h1/desired.json does not exist; the host has no document to take until it does"
	reads(t, p, true, "", gone, true)
	reads(t, p, false, "", "", false)
	b.set(`{"v":333}`)
	reads(t, p, true, `{"v":333}`, "", false)
	want := []string{
		"fleet: s3://fleet/h1/desired.json changed (etag e7)",
		"fleet: " + denied,
		"fleet: s3://fleet/h1/desired.json is readable again",
		"fleet: s3://fleet/h1/desired.json changed (etag e8)",
		"fleet: " + gone,
		"fleet: s3://fleet/h1/desired.json is readable again",
		"fleet: s3://fleet/h1/desired.json changed (etag e9)",
	}
	if fmt.Sprint(*logged) != fmt.Sprint(want) {
		t.Fatalf("logged:\n%q\nwant:\n%q", *logged, want)
	}
}

func TestAnObjectLargerThanADocumentIsRefusedInDesiredsWordsNamingItsSize(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	ctx := context.Background()
	if _, _, err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	b.data, b.etag = make([]byte, desired.MaxDocumentBytes+1), "big"
	doc, ok, err := p.Poll(ctx)
	var big *TooLargeError
	if !errors.As(err, &big) || big.Size != desired.MaxDocumentBytes+1 {
		t.Fatalf("err = %v, want a TooLargeError of %d bytes", err, desired.MaxDocumentBytes+1)
	}
	want := "s3://fleet/h1/desired.json (16777217 bytes) " + desired.TooLarge()
	if err.Error() != want {
		t.Fatalf("err = %q\nwant %q", err, want)
	}
	if !ok || !doc.Status() || doc.Problem != want+"; the host keeps the document it has" {
		t.Fatalf("the poll handed %v %+v; want only the problem", ok, doc)
	}
	if last := (*logged)[len(*logged)-1]; last != "fleet: "+want+"; the host keeps the document it has" {
		t.Fatalf("logged %q", last)
	}
	// At the limit exactly, it is read, and there is no problem left.
	b.data, b.etag = make([]byte, desired.MaxDocumentBytes), "limit"
	if doc, ok, err := p.Poll(ctx); !ok || err != nil || len(doc.Data) != desired.MaxDocumentBytes || doc.Problem != "" {
		t.Fatalf("a document of exactly the limit: %v %v (%d bytes, problem %q)", ok, err, len(doc.Data), doc.Problem)
	}
	if got := p.Problem(); got != "" {
		t.Fatalf("after a good poll the problem is still %q", got)
	}
}

func TestRunHandsTheDaemonTheFirstReadingAtOnce(t *testing.T) {
	_, p, _ := pollerOfOne(t, `{"v":1}`)
	p.Interval = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan watch.Document)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, out) }()
	if doc := <-out; string(doc.Data) != `{"v":1}` {
		t.Fatalf("the first reading is %+v", doc)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAReportGoesUpAtOnceWhenItSaysSomethingNewAndAtTheHeartbeatOtherwise(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	running := &reported.HostReportedState{HostId: "h1", ReportedAt: t0, Instances: []reported.Instance{{AppId: "web", State: reported.InstanceRunning}}}
	later := *running
	later.ReportedAt = t0.Add(2 * time.Second)
	later.Allocatable.MemoryMib = 512 // a measurement, not news
	idle := &reported.HostReportedState{HostId: "h1", ReportedAt: t0.Add(4 * time.Second), Instances: []reported.Instance{{AppId: "web", State: reported.InstanceIdle}}}
	for _, c := range []struct {
		name   string
		put    *reported.HostReportedState
		latest *reported.HostReportedState
		want   time.Duration
	}{
		{"nothing put yet", nil, running, 0},
		{"only measurements changed", running, &later, time.Minute},
		{"a state changed", running, idle, time.Second},
	} {
		if got := NextPut(c.put, t0, c.latest, time.Minute, time.Second); got.Sub(t0) != c.want {
			t.Errorf("%s: put after %s, want %s", c.name, got.Sub(t0), c.want)
		}
	}
}

func TestAPollCutShortByTheDaemonStoppingSaysAndAsksNothing(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	if _, _, err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(*logged)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.fail = context.Canceled
	if _, ok, err := p.Poll(ctx); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("ok %v, err = %v", ok, err)
	}
	if got := (*logged)[before:]; len(got) != 0 || p.Problem() != "" {
		t.Fatalf("a poll cut short logged %q and reports %q", got, p.Problem())
	}
	// A store that fails on its own is still said.
	b.fail = errors.New("503 SlowDown")
	p.Poll(context.Background())
	if !strings.Contains(p.Problem(), "503 SlowDown") {
		t.Fatalf("problem %q", p.Problem())
	}
}
