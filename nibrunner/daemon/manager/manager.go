// Package manager runs a process's long-lived goroutines as Runnables, as
// controller-runtime's Manager runs its Runnables: each component registers
// what it runs (Start(ctx) blocks until ctx ends), in a declared order; the
// manager starts them in that order, stops them in the reverse order, each
// one ended before the one declared before it is asked to stop, and reports
// the first error any of them returned. A component that starts goroutines
// on demand (a worker per action, a prober per guest) registers a Pool, so
// that those goroutines too are the manager's, and end before the
// components declared before the pool are stopped.
//
// controller-runtime (pkg/manager) groups its runnables (caches, webhooks,
// others, leader election) and stops the groups in an order of its own;
// this one keeps one list, which is the declared order (docs/decisions.md,
// nibrunner/daemon/manager). It has nothing of leader election, webhooks
// or caches.
package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Runnable is one long-lived part of a process. Start runs it and blocks
// until ctx ends (or it fails); it returns nil when it ended because ctx
// did.
type Runnable interface {
	Start(ctx context.Context) error
}

// RunnableFunc makes a function a Runnable.
type RunnableFunc func(ctx context.Context) error

// Start calls f.
func (f RunnableFunc) Start(ctx context.Context) error { return f(ctx) }

// ErrStopped is what Add answers once the manager began stopping.
var ErrStopped = errors.New("the manager is stopping")

// Manager owns the runnables added to it. The zero value is not usable:
// make one with New.
type Manager struct {
	mu sync.Mutex
	// list is every runnable added and not yet stopped, in the order added.
	list    []*Handle
	started bool
	// stopping is closed when Stop begins; failed when a runnable first
	// returns an error, which err keeps.
	stopping chan struct{}
	failed   chan struct{}
	err      error
}

// New returns a manager with nothing added.
func New() *Manager {
	return &Manager{stopping: make(chan struct{}), failed: make(chan struct{})}
}

// Handle is one runnable added to a manager.
type Handle struct {
	m      *Manager
	name   string
	r      Runnable
	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// Add declares r, named name (errors say it), after everything added
// before it: it is started after them and stopped before them. Before
// Start it waits for Start; once the manager runs, it starts at once.
// Once the manager began stopping, it is refused with ErrStopped.
func (m *Manager) Add(name string, r Runnable) (*Handle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.isStopping() {
		return nil, fmt.Errorf("add %s: %w", name, ErrStopped)
	}
	h := &Handle{m: m, name: name, r: r, done: make(chan struct{})}
	m.list = append(m.list, h)
	if m.started {
		h.run()
	}
	return h, nil
}

// Start starts every runnable added so far, in the order they were added.
// It does not wait for them: each runs on a goroutine of its own until
// Stop (or its Handle's Stop).
func (m *Manager) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.isStopping():
		return ErrStopped
	case m.started:
		return errors.New("the manager was started already")
	}
	m.started = true
	for _, h := range m.list {
		h.run()
	}
	return nil
}

// run starts h's goroutine (m.mu held).
func (h *Handle) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		err := h.r.Start(ctx)
		if err != nil && !(ctx.Err() != nil && errors.Is(err, context.Canceled)) {
			err = fmt.Errorf("%s: %w", h.name, err)
			h.m.failedWith(err)
		} else {
			err = nil
		}
		h.err = err
		close(h.done)
	}()
}

func (m *Manager) failedWith(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = err
		close(m.failed)
	}
}

func (m *Manager) isStopping() bool {
	select {
	case <-m.stopping:
		return true
	default:
		return false
	}
}

// Stop stops every runnable in the reverse of the order they were added:
// each one's context is cancelled, and it has returned, before the one
// added before it is asked to stop. It returns the first error any
// runnable returned (since the manager started), or nil. Add is refused
// from the moment it begins; calling it again waits for nothing more.
func (m *Manager) Stop() error {
	m.mu.Lock()
	if !m.isStopping() {
		close(m.stopping)
	}
	list := m.list
	m.list = nil
	started := m.started
	m.mu.Unlock()
	if started {
		for i := len(list) - 1; i >= 0; i-- {
			list[i].stopAndWait()
		}
	}
	return m.Err()
}

// Err is the first error a runnable returned, or nil.
func (m *Manager) Err() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Stopping is closed when Stop begins: what waits for something the
// manager's runnables would do ends waiting then.
func (m *Manager) Stopping() <-chan struct{} { return m.stopping }

// Failed is closed when a runnable first returns an error (Err says it).
func (m *Manager) Failed() <-chan struct{} { return m.failed }

// Done is closed when h's runnable has returned.
func (h *Handle) Done() <-chan struct{} { return h.done }

// Err is what h's runnable returned (nil until Done is closed, and when it
// ended because it was stopped).
func (h *Handle) Err() error {
	select {
	case <-h.done:
		return h.err
	default:
		return nil
	}
}

// Stop stops h's runnable alone, before the manager stops, and waits for
// it to return; it returns what the runnable returned. A runnable the
// manager had not started yet is only removed.
func (h *Handle) Stop() error {
	m := h.m
	m.mu.Lock()
	for i, x := range m.list {
		if x == h {
			m.list = append(m.list[:i:i], m.list[i+1:]...)
			break
		}
	}
	running := h.cancel != nil
	m.mu.Unlock()
	if !running {
		return nil
	}
	h.stopAndWait()
	return h.err
}

func (h *Handle) stopAndWait() {
	if h.cancel == nil {
		return // never started
	}
	h.cancel()
	<-h.done
}

// Pool is a Runnable that runs goroutines on demand (Go): each gets a
// context that ends when the pool is stopped, and the pool's Start
// returns only once every one of them has returned. Go may be called as
// soon as the pool is made, before the manager starts it.
type Pool struct {
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	stopped bool
	tasks   sync.WaitGroup
}

// NewPool returns a pool with no goroutine running.
func NewPool() *Pool {
	p := &Pool{}
	p.ctx, p.stop = context.WithCancel(context.Background())
	return p
}

// Start runs the pool until ctx ends, then ends its goroutines' contexts
// and waits for them to return.
func (p *Pool) Start(ctx context.Context) error {
	<-ctx.Done()
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.stop()
	p.tasks.Wait()
	return nil
}

// Go runs fn on a goroutine of the pool's, with a context that ends when
// the pool stops or when the returned cancel is called. It reports false,
// and runs nothing, once the pool is stopping: the caller undoes what it
// prepared for fn.
func (p *Pool) Go(fn func(ctx context.Context)) (context.CancelFunc, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return func() {}, false
	}
	ctx, cancel := context.WithCancel(p.ctx)
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		defer cancel()
		fn(ctx)
	}()
	return cancel, true
}
