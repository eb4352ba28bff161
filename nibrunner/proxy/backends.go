package proxy

import (
	"context"
	"sync"
	"time"
)

// defaultMaxBackendConnsPerApp bounds the connections to one app in use at
// once, over both paths, unless Options say otherwise: twice the
// per-client cap's default, so that one client alone cannot take an app's
// whole share.
const defaultMaxBackendConnsPerApp = 2 * defaultMaxConnectionsPerClient

// appSlots bounds, per app, the requests that hold a connection to it: a
// request forwarded holds one from before it takes or dials one until
// its answer (or upgraded stream) ends. nginx bounds an upstream server's
// connections the same way (max_conns), and a request past the bound
// waits for a place as its commercial queue does, here at most
// DialTimeout, since waiting for a place is part of reaching the app.
type appSlots struct {
	max int
	// byApp is each app's places (app → slot), read without a lock on
	// every request: a mutex here was one every connection took.
	byApp sync.Map
}

// slot is one app's places: a value sent is a place taken.
type slot chan struct{}

// release gives back the place acquire took.
func (s slot) release() { <-s }

// acquire waits for a place among app's connections: the slot to
// release once done with it, or false when none came within wait or ctx
// ended first. Taking a free place allocates nothing.
func (a *appSlots) acquire(ctx context.Context, app string, wait time.Duration) (slot, bool) {
	if s, ok := a.try(app); ok {
		return s, true
	}
	ch := a.of(app)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return ch, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// try takes a free place among app's connections without waiting.
func (a *appSlots) try(app string) (slot, bool) {
	ch := a.of(app)
	select {
	case ch <- struct{}{}:
		return ch, true
	default:
		return nil, false
	}
}

func (a *appSlots) of(app string) slot {
	v, ok := a.byApp.Load(app)
	if !ok {
		v, _ = a.byApp.LoadOrStore(app, make(slot, a.max))
	}
	return v.(slot)
}

// keep forgets the apps keep refuses that hold no place.
func (a *appSlots) keep(keep func(app string) bool) {
	a.byApp.Range(func(k, v any) bool {
		if app := k.(string); !keep(app) && len(v.(slot)) == 0 {
			a.byApp.Delete(app)
		}
		return true
	})
}
