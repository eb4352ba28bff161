package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/reported"
)

// bucketOfReports hands on each put, failing the next fails of them.
type bucketOfReports struct {
	mu    sync.Mutex
	fails int
	puts  chan *reported.HostReportedState
}

func (b *bucketOfReports) PutSmall(_ context.Context, key string, data []byte, contentType string) error {
	b.mu.Lock()
	fail := b.fails > 0
	b.fails--
	b.mu.Unlock()
	if fail {
		b.puts <- nil
		return errors.New("503 SlowDown")
	}
	var r reported.HostReportedState
	if err := json.Unmarshal(data, &r); err != nil || contentType != "application/json" || key != "h1/reported.json" {
		return errors.New("not a report")
	}
	b.puts <- &r
	return nil
}

func TestTheUploaderPutsWhatIsNewAndRetriesAFailedPutWithTheLatestReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reported.json")
	write := func(st reported.InstanceState, at time.Duration) {
		t.Helper()
		b, _ := json.Marshal(&reported.HostReportedState{HostId: "h1", ReportedAt: time.Unix(0, 0).Add(at),
			Instances: []reported.Instance{{AppId: "web", State: st}}})
		os.WriteFile(path+".tmp", b, 0o644)
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	b := &bucketOfReports{puts: make(chan *reported.HostReportedState, 16)}
	var logged []string
	u := &Uploader{Dest: b, Key: "h1/reported.json", URL: "s3://fleet/h1/reported.json", Report: path,
		Heartbeat: time.Hour, MinGap: 10 * time.Millisecond,
		Logf: func(f string, a ...any) { logged = append(logged, f) }} // read once Run has returned
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	next := func() *reported.HostReportedState {
		t.Helper()
		select {
		case r := <-b.puts:
			return r
		case <-time.After(20 * time.Second):
			t.Fatal("nothing was put")
		}
		return nil
	}

	write(reported.InstanceStarting, 0)
	if r := next(); r == nil || r.Instances[0].State != reported.InstanceStarting {
		t.Fatalf("first put %+v", r)
	}
	// Only reportedAt changes: it waits for the heartbeat. Then a state
	// change goes up at once, and it is the put after the first.
	write(reported.InstanceStarting, 2*time.Second)
	write(reported.InstanceRunning, 4*time.Second)
	if r := next(); r == nil || r.Instances[0].State != reported.InstanceRunning {
		t.Fatalf("second put %+v, want the running report", r)
	}
	// Two failed puts, then the latest report goes up.
	b.mu.Lock()
	b.fails = 2
	b.mu.Unlock()
	write(reported.InstanceIdle, 6*time.Second)
	for range 2 {
		if next() != nil {
			t.Fatal("the failing puts were not tried")
		}
	}
	if r := next(); r == nil || r.Instances[0].State != reported.InstanceIdle {
		t.Fatalf("after the failures %+v, want the idle report", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(logged) != 2 {
		t.Fatalf("logged %q: want the failure once and its end once", logged)
	}
}
