package schedule_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/checkpoint/schedule"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

const prefix = "checkpoints/host-a/scheduled/"

// oneVolume is a host with one volume, "blog": a sparse file whose first
// bytes say which interval last wrote it.
type oneVolume struct{ path string }

func (h oneVolume) Volumes(context.Context) ([]string, error) { return []string{"blog"}, nil }
func (h oneVolume) VolumeToCopy(_ context.Context, id string) (checkpoint.Volume, error) {
	return checkpoint.Volume{ID: id, Path: h.path}, nil
}

func (h oneVolume) write(t *testing.T, interval uint64) {
	t.Helper()
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], interval)
	if _, err := f.WriteAt(b[:], 1<<20); err != nil {
		t.Fatal(err)
	}
}

// fixture is a schedule of "blog" every hour, keeping 3, into a real S3
// (versitygw), on a clock the test moves.
type fixture struct {
	srv     *s3test.Server
	objects *store.S3
	clk     *clock.Manual
	vol     oneVolume
	cps     *checkpoint.Store
	dir     string
	events  chan schedule.Event
	s       *schedule.Schedule
	stop    func()
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "fleet")
	objects, err := store.NewS3(context.Background(), "s3://fleet")
	if err != nil {
		t.Fatal(err)
	}
	// One try a request: the outage fails the checkpoint at once, and the
	// schedule's own backoff is what retries it.
	objects.SetRetry(store.Retry{Attempts: 1})
	dir := t.TempDir()
	cps, err := checkpoint.Open(context.Background(), checkpoint.Options{Dir: filepath.Join(dir, "store"), Objects: objects, Prefix: prefix, UploadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, objects: objects, cps: cps, dir: dir, clk: clock.NewManual(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
		vol: oneVolume{filepath.Join(dir, "blog.ext4")}, events: make(chan schedule.Event, 64)}
	f.vol.write(t, 0)
	f.start(t, nil)
	return f
}

// start runs a schedule on f's folder, ending the one running before;
// volumes are the per-volume policies.
func (f *fixture) start(t *testing.T, volumes map[string]schedule.Policy) {
	t.Helper()
	if f.stop != nil {
		f.stop()
	}
	s, err := schedule.New(schedule.Options{
		Store: f.cps, Dir: filepath.Join(f.dir, "schedule"),
		Default: schedule.Policy{Interval: time.Hour, Keep: 3},
		Volumes: volumes,
		Clock:   f.clk,
		Retry:   backoff.Policy{Initial: time.Minute, Max: 10 * time.Minute, Factor: 2},
		OnEvent: func(e schedule.Event) { f.events <- e },
		Logf:    t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.s = s
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, f.vol) }()
	stopped := false
	f.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the schedule ended with %v", err)
		}
	}
	t.Cleanup(f.stop)
	f.idle(t)
}

// idle waits for the schedule to wait on the clock: its first round, at
// the time it started, is done.
func (f *fixture) idle(t *testing.T) {
	t.Helper()
	for {
		armed := f.clk.Armed()
		if f.clk.Waiting() > 0 {
			return
		}
		select {
		case <-armed:
		case <-time.After(time.Minute):
			t.Fatal("the schedule never waited on the clock")
		}
	}
}

// next waits for the schedule's next event, which must be of kind.
func (f *fixture) next(t *testing.T, kind string) schedule.Event {
	t.Helper()
	select {
	case e := <-f.events:
		if e.Kind != kind {
			t.Fatalf("the schedule's next event is %+v; want %s", e, kind)
		}
		return e
	case <-time.After(time.Minute):
		t.Fatalf("no %s event within a minute", kind)
	}
	return schedule.Event{}
}

// stored lists the checkpoint objects the store holds, by key.
func (f *fixture) stored(t *testing.T) []string {
	t.Helper()
	list, err := f.objects.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list {
		keys = append(keys, o.Key)
	}
	sort.Strings(keys)
	return keys
}

func keysOf(ts []schedule.Taken) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Key)
	}
	return out
}

func TestTenIntervalsKeepingThreeLeaveTheNewestThreeInTheStoreAndAnOutageDeletesNothing(t *testing.T) {
	f := newFixture(t)
	var taken []string
	for i := uint64(1); i <= 10; i++ {
		f.idle(t)
		f.vol.write(t, i)
		if i == 6 {
			// The store is down when the sixth is due: the checkpoint
			// fails, and nothing older goes.
			before := f.stored(t)
			f.srv.Down()
			f.clk.Advance(time.Hour)
			if e := f.next(t, "failed"); e.Err == nil || !strings.Contains(e.Err.Error(), "fleet") {
				t.Errorf("the failed checkpoint says %v; want the store named", e.Err)
			}
			f.srv.Up(t)
			if got := f.stored(t); strings.Join(got, " ") != strings.Join(before, " ") {
				t.Fatalf("after the failed upload the store holds %v; want %v untouched", got, before)
			}
			if got := keysOf(f.s.Taken("blog")); len(got) != 3 {
				t.Fatalf("after the failed upload the schedule lists %v; want the three it had", got)
			}
			// Its retry, a minute later by the backoff, goes through.
			f.clk.Advance(time.Minute)
		} else {
			f.clk.Advance(time.Hour)
		}
		e := f.next(t, "taken")
		taken = append(taken, prefix+e.ID+checkpoint.ObjectSuffix)
		if i > 3 {
			f.next(t, "deleted")
		}
		want := taken[max(0, len(taken)-3):]
		if got := f.stored(t); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Fatalf("after interval %d the store holds %v; want the newest three %v", i, got, want)
		}
	}
	got := f.s.Taken("blog")
	if len(got) != 3 || strings.Join(keysOf(got), " ") != strings.Join(taken[7:], " ") {
		t.Fatalf("the schedule lists %v; want %v", keysOf(got), taken[7:])
	}
	for i, tk := range got {
		if tk.Digest == "" || (i > 0 && !tk.TakenAt.After(got[i-1].TakenAt)) {
			t.Errorf("checkpoint %+v: want a digest and times in order", tk)
		}
	}
	// The newest holds what the tenth interval wrote.
	r, _, err := f.objects.Get(context.Background(), got[2].Key)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back := filepath.Join(t.TempDir(), "back")
	if _, err := checkpoint.ReadSparse(r, back); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(back)
	if n := binary.BigEndian.Uint64(b[1<<20:]); n != 10 {
		t.Errorf("the newest checkpoint holds interval %d's write; want the tenth's", n)
	}
}

func TestARestartedScheduleKeepsCountingFromTheStoreAndAVolumesOwnPolicyWins(t *testing.T) {
	f := newFixture(t)
	for range 3 {
		// The round before re-arms its timer first: an advance before
		// that is one the schedule never sees.
		f.idle(t)
		f.clk.Advance(time.Hour)
		f.next(t, "taken")
	}
	// Restarted with "blog" kept at 2 every 30 minutes: it knows the
	// three it took, prunes the oldest at once, and is due 30 minutes
	// after the last.
	f.start(t, map[string]schedule.Policy{"blog": {Interval: 30 * time.Minute, Keep: 2}})
	f.next(t, "deleted")
	if got := f.stored(t); len(got) != 2 || strings.Join(got, " ") != strings.Join(keysOf(f.s.Taken("blog")), " ") {
		t.Fatalf("after the restart the store holds %v and the schedule lists %v; want the newest two in both", got, keysOf(f.s.Taken("blog")))
	}
	f.idle(t)
	f.clk.Advance(30 * time.Minute)
	f.next(t, "taken")
	f.next(t, "deleted")
	if got := f.stored(t); len(got) != 2 {
		t.Fatalf("the store holds %v; want two", got)
	}
	// Off: nothing more is taken or deleted.
	f.start(t, map[string]schedule.Policy{"blog": {Off: true}})
	armed := f.clk.Armed()
	f.clk.Advance(24 * time.Hour)
	select {
	case <-armed: // the round ran and the schedule waits again
	case <-time.After(time.Minute):
		t.Fatal("the schedule never ran its round")
	}
	select {
	case e := <-f.events:
		t.Fatalf("a volume whose schedule is off: %+v", e)
	default:
	}
	if got := f.stored(t); len(got) != 2 {
		t.Fatalf("with its schedule off the volume's store holds %v; want the two kept", got)
	}
}
