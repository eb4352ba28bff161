// Package keylock serialises work per key: callers holding different keys
// run in parallel, callers of one key take turns. The layer cache (per
// object), the volume backend (per volume) and the image puller (per
// digest) each need exactly this.
package keylock

import "sync"

// Map is a set of per-key locks. Its zero value is ready to use. A key's
// lock exists only while it is held or waited for, so a map keyed by
// digests or ids does not grow with every key ever seen.
type Map struct {
	mu    sync.Mutex
	locks map[string]*entry
}

type entry struct {
	sync.Mutex
	users int // holders and waiters; guarded by Map.mu
}

// Lock takes key's lock, waiting for its holder, and returns the function
// that lets it go.
func (m *Map) Lock(key string) (unlock func()) {
	m.mu.Lock()
	if m.locks == nil {
		m.locks = map[string]*entry{}
	}
	e := m.locks[key]
	if e == nil {
		e = &entry{}
		m.locks[key] = e
	}
	e.users++
	m.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		m.mu.Lock()
		if e.users--; e.users == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}
