package manager

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// trace records what the runnables did, in order.
type trace struct {
	mu     sync.Mutex
	events []string
}

func (t *trace) add(e string) {
	t.mu.Lock()
	t.events = append(t.events, e)
	t.mu.Unlock()
}

func (t *trace) get() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events)
}

// recorder is a runnable that says when it started and when it stopped;
// started is closed once its Start runs.
type recorder struct {
	name    string
	tr      *trace
	started chan struct{}
}

func newRecorder(name string, tr *trace) *recorder {
	return &recorder{name: name, tr: tr, started: make(chan struct{})}
}

func (r *recorder) Start(ctx context.Context) error {
	r.tr.add("start " + r.name)
	close(r.started)
	<-ctx.Done()
	r.tr.add("stop " + r.name)
	return nil
}

func TestRunnablesStopInTheReverseOfTheDeclaredOrderEachAfterTheNextEnded(t *testing.T) {
	m := New()
	tr := &trace{}
	var rs []*recorder
	for _, name := range []string{"store", "routes", "workers", "loop"} {
		r := newRecorder(name, tr)
		rs = append(rs, r)
		if _, err := m.Add(name, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		<-r.started
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	got := tr.get()[len(rs):]
	want := []string{"stop loop", "stop workers", "stop routes", "stop store"}
	if !slices.Equal(got, want) {
		t.Fatalf("stopped as %q, want %q", got, want)
	}
}

func TestRunnablesAreStartedInTheDeclaredOrderOnlyOnceTheManagerStarts(t *testing.T) {
	m := New()
	tr := &trace{}
	a, b := newRecorder("a", tr), newRecorder("b", tr)
	m.Add("a", a)
	m.Add("b", b)
	if got := tr.get(); len(got) != 0 {
		t.Fatalf("ran before Start: %q", got)
	}
	m.Start()
	<-a.started
	<-b.started
	// One added once the manager runs starts at once, and is stopped first.
	c := newRecorder("c", tr)
	m.Add("c", c)
	<-c.started
	m.Stop()
	got := tr.get()
	if want := []string{"stop c", "stop b", "stop a"}; !slices.Equal(got[3:], want) {
		t.Fatalf("stopped as %q, want %q", got[3:], want)
	}
}

func TestTheFirstErrorIsReportedAndTheOthersStillStop(t *testing.T) {
	m := New()
	tr := &trace{}
	first, second := errors.New("the watcher broke"), errors.New("later")
	failNow := make(chan struct{})
	other := newRecorder("other", tr)
	m.Add("other", other)
	h, _ := m.Add("source", RunnableFunc(func(ctx context.Context) error {
		<-failNow
		return first
	}))
	m.Add("late", RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return second
	}))
	m.Start()
	close(failNow)
	<-m.Failed()
	<-h.Done()
	if !errors.Is(h.Err(), first) {
		t.Fatalf("the handle says %v, want %v", h.Err(), first)
	}
	err := m.Stop()
	if !errors.Is(err, first) || errors.Is(err, second) {
		t.Fatalf("Stop returned %v, want the first error, %v", err, first)
	}
	if got := tr.get(); !slices.Equal(got, []string{"start other", "stop other"}) {
		t.Fatalf("the other runnable: %q", got)
	}
	if want := "source: the watcher broke"; err.Error() != want {
		t.Fatalf("the error says %q, want %q (it names the runnable)", err, want)
	}
}

func TestARunnableEndingWithItsContextIsNoError(t *testing.T) {
	m := New()
	m.Add("ctx", RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}))
	m.Start()
	if err := m.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

func TestNothingIsAddedOnceTheManagerStops(t *testing.T) {
	m := New()
	m.Start()
	m.Stop()
	ran := false
	if _, err := m.Add("late", RunnableFunc(func(context.Context) error { ran = true; return nil })); !errors.Is(err, ErrStopped) {
		t.Fatalf("Add after Stop: %v, want ErrStopped", err)
	}
	if ran {
		t.Fatal("a runnable added after Stop ran")
	}
	select {
	case <-m.Stopping():
	default:
		t.Fatal("Stopping is not closed after Stop")
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
}

func TestAHandleStopsItsRunnableAloneAndTheManagerForgetsIt(t *testing.T) {
	m := New()
	tr := &trace{}
	a, b := newRecorder("a", tr), newRecorder("b", tr)
	m.Add("a", a)
	hb, _ := m.Add("b", b)
	m.Start()
	<-a.started
	<-b.started
	if err := hb.Stop(); err != nil {
		t.Fatal(err)
	}
	if got := tr.get(); got[len(got)-1] != "stop b" {
		t.Fatalf("after the handle's Stop: %q", got)
	}
	m.Stop()
	got := tr.get()
	if n := slices.Index(got, "stop b"); n != len(got)-2 || slices.Index(got[n+1:], "stop b") >= 0 {
		t.Fatalf("b stopped twice or out of turn: %q", got)
	}
}

func TestAPoolsStartReturnsOnlyOnceEveryGoroutineItRanHasReturned(t *testing.T) {
	m := New()
	tr := &trace{}
	p := NewPool()
	store := newRecorder("store", tr)
	m.Add("store", store)
	m.Add("workers", p)
	// Go works before the manager starts.
	ran := make(chan struct{})
	p.Go(func(ctx context.Context) {
		close(ran)
		<-ctx.Done()
		tr.add("worker 1 saw the stop")
	})
	m.Start()
	<-ran
	<-store.started
	cancelled := make(chan struct{})
	cancel, ok := p.Go(func(ctx context.Context) {
		<-ctx.Done()
		close(cancelled)
	})
	if !ok {
		t.Fatal("Go refused while the pool runs")
	}
	cancel()
	<-cancelled
	m.Stop()
	got := tr.get()
	want := []string{"start store", "worker 1 saw the stop", "stop store"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q: the workers end before what was declared before them stops", got, want)
	}
	if _, ok := p.Go(func(context.Context) { t.Error("a goroutine ran on a stopped pool") }); ok {
		t.Fatal("Go accepted on a stopped pool")
	}
}

func TestStopWaitsForARunnableThatTakesItsTime(t *testing.T) {
	m := New()
	release := make(chan struct{})
	ended := make(chan struct{})
	m.Add("slow", RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		<-release
		close(ended)
		return nil
	}))
	m.Start()
	stopped := make(chan error)
	go func() { stopped <- m.Stop() }()
	<-m.Stopping()
	select {
	case <-stopped:
		t.Fatal("Stop returned before the runnable did")
	case <-time.After(10 * time.Millisecond):
		// Not a timing assumption: Stop must not return in any time
		// while the runnable holds on.
	}
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned and the runnable had not")
	}
}
