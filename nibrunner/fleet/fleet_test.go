package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

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
	}
	b.bodys++
	return b.data, b.etag, nil
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

func TestThePollerMirrorsTheObjectAndKeepsTheLastGoodOneWhenItCannotBeRead(t *testing.T) {
	b := &bucket{}
	b.set(`{"v":1}`)
	mirror := filepath.Join(t.TempDir(), MirrorName)
	var logged []string
	p := &Poller{Source: b, Key: "h1/desired.json", URL: "s3://fleet/h1/desired.json", Mirror: mirror, Interval: time.Second,
		Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }}
	ctx := context.Background()
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
	if fmt.Sprint(logged) != fmt.Sprint(want) {
		t.Fatalf("logged:\n%q\nwant:\n%q", logged, want)
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
