package jobs

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/clock"
)

// ended returns an OnEnd that reports every end on a channel.
func ended() (func(string, Status), chan Status) {
	ch := make(chan Status, 16)
	return func(_ string, st Status) { ch <- st }, ch
}

func wait(t *testing.T, ch chan Status) Status {
	t.Helper()
	select {
	case st := <-ch:
		return st
	case <-time.After(10 * time.Second):
		t.Fatal("no job ended within 10 s")
		return Status{}
	}
}

func TestAJobRunsInTheBackgroundAndEndsReady(t *testing.T) {
	onEnd, ends := ended()
	r := New(Options{OnEnd: onEnd})
	defer r.Close()
	release := make(chan struct{})
	started := make(chan struct{})
	if ok, err := r.Submit("a", func(ctx context.Context) error { close(started); <-release; return nil }); !ok || err != nil {
		t.Fatalf("Submit = %v, %v; want a new job", ok, err)
	}
	<-started
	if st, _ := r.Status("a"); st.State != Preparing {
		t.Errorf("a running job is %q, want preparing", st.State)
	}
	close(release)
	if st := wait(t, ends); st.State != Ready || st.Attempts != 1 {
		t.Errorf("ended %+v, want ready after one attempt", st)
	}
	if st, _ := r.Status("a"); st.State != Ready {
		t.Errorf("a finished job is %q, want ready", st.State)
	}
}

func TestNoMoreJobsRunAtOnceThanTheConcurrencyAllows(t *testing.T) {
	onEnd, ends := ended()
	r := New(Options{Concurrency: 2, OnEnd: onEnd})
	defer r.Close()
	var running, most atomic.Int32
	started := make(chan struct{}, 5)
	release := make(chan struct{})
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		r.Submit(id, func(ctx context.Context) error {
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			started <- struct{}{}
			<-release
			running.Add(-1)
			return nil
		})
	}
	<-started
	<-started
	states := map[State]int{}
	for _, id := range ids {
		st, _ := r.Status(id)
		states[st.State]++
	}
	if states[Preparing] != 2 || states[Pending] != 3 {
		t.Errorf("with 2 slots taken the jobs are %v, want 2 preparing and 3 pending", states)
	}
	close(release)
	for range ids {
		wait(t, ends)
	}
	if most.Load() != 2 {
		t.Errorf("at most %d jobs ran at once, want 2", most.Load())
	}
}

func TestAFailedJobIsRetriedAfterItsBackoffUntilItSucceeds(t *testing.T) {
	onEnd, ends := ended()
	start := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	c := clock.NewManual(start)
	r := New(Options{OnEnd: onEnd, Clock: c, Retry: backoff.Policy{Initial: time.Second, Max: 2 * time.Second, Factor: 2}})
	defer r.Close()
	var runs atomic.Int32
	armed := c.Armed()
	r.Submit("a", func(ctx context.Context) error {
		if runs.Add(1) < 3 {
			return errors.New("the store is down")
		}
		return nil
	})
	first := wait(t, ends)
	if first.State != Failed || first.Message != "the store is down" || !first.RetryAt.Equal(start.Add(time.Second)) || !first.EndedAt.Equal(start) {
		t.Errorf("first end %+v, want failed saying why, ended now by the runner's clock and retried 1 s later", first)
	}
	// The retry waits on the runner's clock, not the machine's.
	<-armed
	armed = c.Armed()
	c.Advance(999 * time.Millisecond)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the job ran %d times before its backoff was over", n)
	}
	c.Advance(time.Millisecond)
	if second := wait(t, ends); second.State != Failed || !second.RetryAt.Equal(start.Add(3*time.Second)) {
		t.Errorf("second end %+v, want failed, retried 2 s later", second)
	}
	<-armed
	c.Advance(2 * time.Second)
	if last := wait(t, ends); last.State != Ready || last.Attempts != 3 {
		t.Errorf("last end %+v, want ready on the third attempt", last)
	}
}

func TestSubmittingAKnownIdStartsNothing(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	release := make(chan struct{})
	defer close(release)
	r.Submit("a", func(ctx context.Context) error { <-release; return nil })
	if ok, _ := r.Submit("a", func(ctx context.Context) error { t.Error("a second job ran"); return nil }); ok {
		t.Error("a second Submit of a running id started a job")
	}
}

func TestForgetCancelsARunningJobAndDropsIt(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	started, cancelled := make(chan struct{}), make(chan struct{})
	r.Submit("a", func(ctx context.Context) error { close(started); <-ctx.Done(); close(cancelled); return ctx.Err() })
	<-started
	r.Forget("a")
	<-cancelled
	if _, ok := r.Status("a"); ok {
		t.Error("a forgotten job still has a status")
	}
	if ok, _ := r.Submit("a", func(ctx context.Context) error { return nil }); !ok {
		t.Error("after Forget, Submit of the same id started nothing")
	}
}

func TestCloseCancelsEveryJobAndWaitsForThem(t *testing.T) {
	r := New(Options{})
	var done atomic.Bool
	started := make(chan struct{})
	r.Submit("a", func(ctx context.Context) error { close(started); <-ctx.Done(); done.Store(true); return nil })
	<-started
	r.Close()
	if !done.Load() {
		t.Error("Close returned before the running job did")
	}
	if _, err := r.Submit("b", func(ctx context.Context) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("Submit after Close = %v, want ErrClosed", err)
	}
}
