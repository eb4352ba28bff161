// Package meter is an app's traffic as the front doors see it (the HTTP
// proxy, the raw relay): how many requests, streams or connections are
// open, and when a byte last came in. The daemon's traffic-idle sleep
// reads it through Activity.
package meter

import (
	"sync"
	"sync/atomic"
	"time"
)

// Meter is one app's traffic. It is safe for concurrent use.
type Meter struct {
	open atomic.Int64
	last atomic.Int64 // unix nanoseconds; 0 = never
}

// Touch records traffic at now.
func (m *Meter) Touch(now time.Time) {
	n := now.UnixNano()
	for {
		old := m.last.Load()
		if old >= n || m.last.CompareAndSwap(old, n) {
			return
		}
	}
}

// Begin opens a request or connection (and is traffic).
func (m *Meter) Begin(now time.Time) {
	m.open.Add(1)
	m.Touch(now)
}

// End closes one; its end counts as traffic, so a long request's idle
// time starts when it finishes, not when it began.
func (m *Meter) End(now time.Time) {
	m.Touch(now)
	m.open.Add(-1)
}

// Open is how many are open now.
func (m *Meter) Open() int64 { return m.open.Load() }

// Activity is when traffic last came (the zero time for never) and
// whether anything is open now.
func (m *Meter) Activity() (last time.Time, busy bool) {
	if n := m.last.Load(); n != 0 {
		last = time.Unix(0, n)
	}
	return last, m.open.Load() > 0
}

// Set is the meters of many apps.
type Set struct{ m sync.Map } // app → *Meter

// Of returns app's meter, making it on first use.
func (s *Set) Of(app string) *Meter {
	if m, ok := s.m.Load(app); ok {
		return m.(*Meter)
	}
	m, _ := s.m.LoadOrStore(app, &Meter{})
	return m.(*Meter)
}

// Activity is app's, or the zero time and not busy for an app never seen.
func (s *Set) Activity(app string) (last time.Time, busy bool) {
	if m, ok := s.m.Load(app); ok {
		return m.(*Meter).Activity()
	}
	return time.Time{}, false
}

// Keep forgets the meters of apps keep refuses, unless one is open.
func (s *Set) Keep(keep func(app string) bool) {
	s.m.Range(func(k, v any) bool {
		if !keep(k.(string)) && v.(*Meter).Open() == 0 {
			s.m.Delete(k)
		}
		return true
	})
}

// Source is anything that tells an app's traffic (the proxy, the relay).
type Source interface {
	Activity(app string) (last time.Time, busy bool)
}

// Merged is the traffic of several front doors as one: the latest of any,
// busy when any is.
type Merged []Source

// Activity implements Source.
func (ms Merged) Activity(app string) (last time.Time, busy bool) {
	for _, s := range ms {
		l, b := s.Activity(app)
		if l.After(last) {
			last = l
		}
		busy = busy || b
	}
	return last, busy
}
