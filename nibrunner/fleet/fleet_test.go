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

func mirrorHolds(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if want == "" {
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the mirror holds %q (%v), want none", got, err)
		}
		return
	}
	if string(got) != want {
		t.Fatalf("the mirror holds %q (%v), want %q", got, err, want)
	}
}

// pollerOfOne is a poller of the object s3://fleet/h1/desired.json, which
// holds doc, into a fresh mirror, and what it logged.
func pollerOfOne(t *testing.T, doc string) (*bucket, *Poller, *[]string) {
	t.Helper()
	b := &bucket{}
	b.set(doc)
	logged := &[]string{}
	p := &Poller{Source: b, Key: "h1/desired.json", URL: "s3://fleet/h1/desired.json", Mirror: filepath.Join(t.TempDir(), MirrorName), Interval: time.Second,
		Logf: func(f string, a ...any) { *logged = append(*logged, fmt.Sprintf(f, a...)) }}
	return b, p, logged
}

func TestThePollerMirrorsTheObjectAndKeepsTheLastGoodOneWhenItCannotBeRead(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	mirror, ctx := p.Mirror, context.Background()
	if changed, err := p.Poll(ctx); !changed || err != nil {
		t.Fatalf("first poll: %v %v", changed, err)
	}
	mirrorHolds(t, mirror, `{"v":1}`)
	// Unchanged: a conditional GET answered with no body.
	for range 3 {
		if changed, _ := p.Poll(ctx); changed {
			t.Fatal("an unchanged object changed the mirror")
		}
	}
	if b.gets != 4 || b.bodys != 1 {
		t.Fatalf("%d gets, %d with a body; want 4 and 1", b.gets, b.bodys)
	}
	// Refused or unreachable: the last good document stays, said once.
	b.fail = errors.New("403 AccessDenied")
	p.Poll(ctx)
	p.Poll(ctx)
	mirrorHolds(t, mirror, `{"v":1}`)
	b.fail = nil
	b.set(`{"v":22}`)
	if changed, err := p.Poll(ctx); !changed || err != nil {
		t.Fatalf("after the outage: %v %v", changed, err)
	}
	mirrorHolds(t, mirror, `{"v":22}`)
	// Deleted: the host has no document, as with a deleted local file.
	b.data = nil
	if changed, _ := p.Poll(ctx); !changed {
		t.Fatal("a deleted object left the mirror")
	}
	mirrorHolds(t, mirror, "")
	want := []string{
		"fleet: s3://fleet/h1/desired.json changed (etag e7); mirrored to " + mirror,
		"fleet: s3://fleet/h1/desired.json cannot be read, so the host keeps the document it has: 403 AccessDenied",
		"fleet: s3://fleet/h1/desired.json is readable again",
		"fleet: s3://fleet/h1/desired.json changed (etag e8); mirrored to " + mirror,
		"fleet: s3://fleet/h1/desired.json does not exist; the host has no document to take until it does",
	}
	if fmt.Sprint(*logged) != fmt.Sprint(want) {
		t.Fatalf("logged:\n%q\nwant:\n%q", *logged, want)
	}
}

func TestAnObjectLargerThanADocumentIsRefusedInDesiredsWordsNamingItsSizeAndTheMirrorKept(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	mirror, ctx := p.Mirror, context.Background()
	if _, err := p.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	b.data, b.etag = make([]byte, desired.MaxDocumentBytes+1), "big"
	_, err := p.Poll(ctx)
	var big *TooLargeError
	if !errors.As(err, &big) || big.Size != desired.MaxDocumentBytes+1 {
		t.Fatalf("err = %v, want a TooLargeError of %d bytes", err, desired.MaxDocumentBytes+1)
	}
	want := "s3://fleet/h1/desired.json (16777217 bytes) " + desired.TooLarge()
	if err.Error() != want {
		t.Fatalf("err = %q\nwant %q", err, want)
	}
	mirrorHolds(t, mirror, `{"v":1}`)
	if last := (*logged)[len(*logged)-1]; last != "fleet: "+want+"; the host keeps the document it has" {
		t.Fatalf("logged %q", last)
	}
	if got := p.Problem(); got != want+"; the host keeps the document it has" {
		t.Fatalf("the problem the daemon reports is %q", got)
	}
	// At the limit exactly, it is read, and there is no problem left.
	b.data, b.etag = make([]byte, desired.MaxDocumentBytes), "limit"
	if changed, err := p.Poll(ctx); !changed || err != nil {
		t.Fatalf("a document of exactly the limit: %v %v", changed, err)
	}
	if got := p.Problem(); got != "" {
		t.Fatalf("after a good poll the problem is still %q", got)
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

func TestAMirrorThatCouldNotBeWrittenIsReportedAndWrittenByTheNextPoll(t *testing.T) {
	_, p, _ := pollerOfOne(t, `{"v":1}`)
	dir := filepath.Join(t.TempDir(), "not-yet")
	p.Mirror = filepath.Join(dir, MirrorName)
	ctx := context.Background()
	if _, err := p.Poll(ctx); err == nil {
		t.Fatal("the mirror's folder is missing, yet the poll wrote it")
	}
	if got := p.Problem(); !strings.Contains(got, "could not be written where the daemon reads it") || !strings.Contains(got, p.Mirror) {
		t.Fatalf("the problem the daemon reports is %q", got)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if changed, err := p.Poll(ctx); err != nil || !changed {
		t.Fatalf("the next poll: changed %v, %v; it must write the mirror, not be told the object is unchanged", changed, err)
	}
	mirrorHolds(t, p.Mirror, `{"v":1}`)
	if got := p.Problem(); got != "" {
		t.Fatalf("after the mirror was written the problem is still %q", got)
	}
}

func TestAPollCutShortByTheDaemonStoppingSaysAndAsksNothing(t *testing.T) {
	b, p, logged := pollerOfOne(t, `{"v":1}`)
	if _, err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := len(*logged)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b.fail = context.Canceled
	if _, err := p.Poll(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
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
