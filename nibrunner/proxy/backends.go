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
	max   int
	mu    sync.Mutex
	byApp map[string]chan struct{}
}

// acquire waits for a place among app's connections: the release to call
// once done with it, or false when none came within wait or ctx ended
// first.
func (a *appSlots) acquire(ctx context.Context, app string, wait time.Duration) (func(), bool) {
	a.mu.Lock()
	if a.byApp == nil {
		a.byApp = map[string]chan struct{}{}
	}
	ch := a.byApp[app]
	if ch == nil {
		ch = make(chan struct{}, a.max)
		a.byApp[app] = ch
	}
	a.mu.Unlock()
	release := func() { <-ch }
	select {
	case ch <- struct{}{}:
		return release, true
	default:
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case ch <- struct{}{}:
		return release, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// keep forgets the apps keep refuses that hold no place.
func (a *appSlots) keep(keep func(app string) bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for app, ch := range a.byApp {
		if !keep(app) && len(ch) == 0 {
			delete(a.byApp, app)
		}
	}
}
