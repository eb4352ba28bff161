// Package jobs runs the host's long work — checkpoints and exports — in
// the background, beside the reconcile pass and never inside it: a pass
// only asks for a job and reads how it is doing, so a wake or a start is
// never held up by a copy or an upload.
//
// There is one job per id at most. A job waits for one of a bounded number
// of slots (pending), runs (preparing), and ends ready or failed. A failed
// job is run again after a backoff that grows with each failure, until it
// succeeds or is forgotten; its status meanwhile says why it failed. When a
// job ends, OnEnd is called (the daemon kicks a pass there, so the report
// shows the result at once). Close cancels every job's context and waits.
package jobs

import (
	"context"
	"errors"
	"sync"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/clock"
)

// State is where a job is.
type State string

// The states of a job.
const (
	// Pending: waiting for a slot, or for its retry after a failure
	// (Status.Message then says what failed).
	Pending State = "pending"
	// Preparing: running.
	Preparing State = "preparing"
	// Ready: done; the job stays ready until it is forgotten.
	Ready State = "ready"
	// Failed: the last run failed; it runs again at Status.RetryAt.
	Failed State = "failed"
)

// Func is a job's work. It returns when done or when ctx ends.
type Func func(ctx context.Context) error

// Status is what a job is doing.
type Status struct {
	State State
	// Message is the last failure's error, while the job is failed.
	Message string
	// Attempts counts the runs that ended (failed or ready).
	Attempts int
	// RetryAt is when a failed job runs again.
	RetryAt time.Time
	// EndedAt is when the last run ended.
	EndedAt time.Time
}

// Options configure a Runner.
type Options struct {
	// Concurrency bounds the jobs running at once (default 1).
	Concurrency int
	// Retry spaces the runs of a failing job: Retry.Delay(n) after the
	// n-th failure (default 1 s doubling up to 5 min). MaxRestarts and
	// ResetAfter are not used: a job is retried until it is forgotten.
	Retry backoff.Policy
	// OnEnd is called after every run, in its own goroutine's turn,
	// without any lock held.
	OnEnd func(id string, st Status)
	// Clock is what a job's end and retry are timed by, and what its
	// retry waits on (default clock.Real): the daemon's own clock.
	Clock clock.Clock
}

// Runner runs jobs by id.
type Runner struct {
	opt  Options
	sem  chan struct{}
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	// mu guards jobs and each job's status; it is a leaf (the daemon takes
	// it under its own lock) and never held while a job runs, waits for
	// its retry or for a slot, or while OnEnd is called.
	mu   sync.Mutex
	jobs map[string]*job
}

type job struct {
	fn     Func
	status Status
	cancel context.CancelFunc
	gen    int // bumped by Forget, so a late end of a forgotten job is dropped
}

// New returns a Runner.
func New(opt Options) *Runner {
	if opt.Concurrency < 1 {
		opt.Concurrency = 1
	}
	if opt.Retry.Initial <= 0 {
		opt.Retry = backoff.Policy{Initial: time.Second, Max: 5 * time.Minute, Factor: 2}
	}
	opt.Clock = clock.Or(opt.Clock)
	ctx, stop := context.WithCancel(context.Background())
	return &Runner{opt: opt, sem: make(chan struct{}, opt.Concurrency), ctx: ctx, stop: stop, jobs: map[string]*job{}}
}

// ErrClosed is returned by Submit after Close.
var ErrClosed = errors.New("the job runner is closed")

// Submit starts job id running fn, unless a job with that id is already
// known (pending, running, waiting for a retry or ready): asking again is
// free, so a pass may submit everything it wants every time. It reports
// whether a new job started.
func (r *Runner) Submit(id string, fn Func) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx.Err() != nil {
		return false, ErrClosed
	}
	if _, ok := r.jobs[id]; ok {
		return false, nil
	}
	j := &job{fn: fn, status: Status{State: Pending}}
	r.jobs[id] = j
	r.start(id, j, 0)
	return true, nil
}

// start runs j after delay; r.mu is held.
func (r *Runner) start(id string, j *job, delay time.Duration) {
	ctx, cancel := context.WithCancel(r.ctx)
	j.cancel = cancel
	gen := j.gen
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		if delay > 0 {
			t := r.opt.Clock.NewTimer(delay)
			select {
			case <-t.C():
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		r.mu.Lock()
		if j.gen != gen || r.jobs[id] != j {
			r.mu.Unlock()
			<-r.sem
			return
		}
		j.status.State = Preparing
		r.mu.Unlock()

		err := j.fn(ctx)
		<-r.sem

		r.mu.Lock()
		if j.gen != gen || r.jobs[id] != j || r.ctx.Err() != nil {
			r.mu.Unlock()
			return
		}
		j.status.Attempts++
		j.status.EndedAt = r.opt.Clock.Now()
		if err == nil {
			j.status = Status{State: Ready, Attempts: j.status.Attempts, EndedAt: j.status.EndedAt}
		} else {
			d := r.opt.Retry.Delay(j.status.Attempts)
			j.status.State, j.status.Message, j.status.RetryAt = Failed, err.Error(), r.opt.Clock.Now().Add(d)
			r.start(id, j, d)
		}
		st := j.status
		r.mu.Unlock()
		if r.opt.OnEnd != nil {
			r.opt.OnEnd(id, st)
		}
	}()
}

// Status returns job id's status, and false when there is no such job.
func (r *Runner) Status(id string) (Status, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	j, ok := r.jobs[id]
	if !ok {
		return Status{}, false
	}
	return j.status, true
}

// IDs returns the ids of every known job.
func (r *Runner) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.jobs))
	for id := range r.jobs {
		out = append(out, id)
	}
	return out
}

// Forget cancels job id (a run in progress sees its context end) and drops
// it, so the next Submit of id starts afresh. It does not wait for the run
// to return.
func (r *Runner) Forget(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if j, ok := r.jobs[id]; ok {
		j.gen++
		j.cancel()
		delete(r.jobs, id)
	}
}

// Close cancels every job and waits for their runs to return.
func (r *Runner) Close() {
	r.mu.Lock()
	r.stop()
	r.mu.Unlock()
	r.wg.Wait()
}
