// Package clock is nibrunnerd's one clock: what the daemon, its health
// probers and its job runner read the time from and wait on. The daemon is
// given one Clock and hands the same one to everything it starts, so every
// time it records (a start, a probe, a job's end, a listing) is on one
// scale and a test that moves the clock moves it for all of them.
//
// Socket deadlines are the kernel's and stay on the real clock.
package clock

import (
	"sort"
	"sync"
	"time"
)

// Clock tells the time and makes timers that fire by it.
type Clock interface {
	Now() time.Time
	// NewTimer is a timer that fires once, d from now by this clock.
	NewTimer(d time.Duration) Timer
}

// Timer is time.Timer's surface, over a channel the Clock fills.
type Timer interface {
	C() <-chan time.Time
	// Stop and Reset are time.Timer's (since Go 1.23: no stale value is
	// received after either).
	Stop() bool
	Reset(d time.Duration) bool
}

// Real is the machine's clock.
var Real Clock = real{}

type real struct{}

func (real) Now() time.Time                 { return time.Now() }
func (real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Or is c, or Real when c is nil.
func Or(c Clock) Clock {
	if c == nil {
		return Real
	}
	return c
}

// Since is the time elapsed since t by c.
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Until is the time left until t by c.
func Until(c Clock, t time.Time) time.Duration { return t.Sub(c.Now()) }

// Manual is a clock that moves only when told (Advance, Set): its timers
// fire when it passes their time. The zero value starts at the zero time;
// NewManual starts it elsewhere. Safe for concurrent use.
type Manual struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
	// armed is closed, and replaced, whenever a timer is armed, so a test
	// can wait for the code it drives to be waiting on the clock.
	armed chan struct{}
}

// NewManual is a Manual clock at now.
func NewManual(now time.Time) *Manual { return &Manual{now: now} }

// Now is the clock's time.
func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d, firing the timers it passes, in
// the order of their times.
func (m *Manual) Advance(d time.Duration) { m.Set(m.Now().Add(d)) }

// Set moves the clock to t (never backwards: an earlier t is ignored) and
// fires the timers it passes.
func (m *Manual) Set(t time.Time) {
	m.mu.Lock()
	if t.After(m.now) {
		m.now = t
	}
	now := m.now
	var due []*manualTimer
	kept := m.timers[:0]
	for _, mt := range m.timers {
		if !mt.at.After(now) {
			due = append(due, mt)
		} else {
			kept = append(kept, mt)
		}
	}
	m.timers = kept
	m.mu.Unlock()
	sort.Slice(due, func(i, j int) bool { return due[i].at.Before(due[j].at) })
	for _, mt := range due {
		select {
		case mt.c <- now:
		default: // a value is waiting already, as with time.Timer
		}
	}
}

// Armed returns a channel closed when a timer is next armed (made, or
// reset) on this clock.
func (m *Manual) Armed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.armed == nil {
		m.armed = make(chan struct{})
	}
	return m.armed
}

// Waiting is how many timers wait for the clock to reach their time.
func (m *Manual) Waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.timers)
}

// NewTimer is a timer that fires when the clock reaches now+d (at once
// when d <= 0).
func (m *Manual) NewTimer(d time.Duration) Timer {
	mt := &manualTimer{m: m, c: make(chan time.Time, 1)}
	mt.Reset(d)
	return mt
}

type manualTimer struct {
	m  *Manual
	c  chan time.Time
	at time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.c }

func (t *manualTimer) Stop() bool {
	m := t.m
	m.mu.Lock()
	defer m.mu.Unlock()
	was := m.drop(t)
	select {
	case <-t.c:
	default:
	}
	return was
}

func (t *manualTimer) Reset(d time.Duration) bool {
	m := t.m
	m.mu.Lock()
	was := m.drop(t)
	select {
	case <-t.c:
	default:
	}
	t.at = m.now.Add(d)
	fire := d <= 0
	if !fire {
		m.timers = append(m.timers, t)
	}
	if m.armed != nil {
		close(m.armed)
		m.armed = nil
	}
	now := m.now
	m.mu.Unlock()
	if fire {
		select {
		case t.c <- now:
		default:
		}
	}
	return was
}

// drop takes t off the waiting timers, saying whether it was on (m.mu
// held).
func (m *Manual) drop(t *manualTimer) bool {
	for i, mt := range m.timers {
		if mt == t {
			m.timers = append(m.timers[:i], m.timers[i+1:]...)
			return true
		}
	}
	return false
}
