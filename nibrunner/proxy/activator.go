package proxy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"alpnib.dev/nibrunner/route"
)

// activator runs at most one wake per app at a time; everyone who asks
// while it runs waits on the same one.
type activator struct {
	mu       sync.Mutex
	inflight map[string]*wake
	// n is len(inflight), read without mu: a request to an app that is
	// up asks for its wake, and with none under way anywhere (nearly
	// always) takes no lock shared by every request (issue 41).
	n atomic.Int64
}

// wake is one wake under way; err and addr are set before done closes.
type wake struct {
	done chan struct{}
	err  error
	addr string // where the woken app answers, when the Waker can say
}

// running is the wake under way for app, or nil.
func (a *activator) running(app string) *wake {
	if a.n.Load() == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.inflight[app]
}

// start joins the wake under way for app or begins one. The wake runs on
// the proxy's own context bounded by WakeTimeout, not on the request that
// began it: a client that gives up must not cancel the wake the others
// wait on.
func (p *Proxy) start(app string) *wake {
	a := &p.wakes
	a.mu.Lock()
	defer a.mu.Unlock()
	if wk := a.inflight[app]; wk != nil {
		return wk
	}
	wk := &wake{done: make(chan struct{})}
	a.inflight[app] = wk
	a.n.Add(1)
	go func() {
		var err error
		var addr string
		began := p.opts.Now()
		if w := p.waker.Load(); w == nil {
			err = route.ErrNotRunning
		} else {
			ctx, cancel := context.WithTimeout(p.ctx, p.opts.WakeTimeout)
			err = (*w).Wake(ctx, app)
			cancel()
			if l, ok := (*w).(Locator); ok && err == nil {
				addr = l.Backend(app)
			}
		}
		if p.opts.Recorder != nil {
			p.opts.Recorder.WakeWaited("http", p.opts.Now().Sub(began), err)
		}
		if err == nil {
			// Mark the table in force now: one applied while the wake ran
			// was computed before the guest answered.
			p.table.Load().awake.Store(app, addr)
		} else if !errors.Is(err, route.ErrNotRunning) {
			p.opts.Logf("nibrunnerd: proxy: wake %s: %v", app, err)
		}
		a.mu.Lock()
		delete(a.inflight, app)
		a.n.Add(-1)
		wk.err, wk.addr = err, addr
		close(wk.done)
		a.mu.Unlock()
	}()
	return wk
}

// await waits for wk on behalf of a request; false means v now holds the
// answer. A request that asks to upgrade (a WebSocket, say) is not held:
// clients of those retry on their own, and a held handshake would likely
// time out anyway, so it gets 503 with Retry-After at once while the wake
// goes on. ctx ending (the client left) ends the wait, not the wake.
func (p *Proxy) await(ctx context.Context, wk *wake, upgrade bool, v *verdict) bool {
	if upgrade {
		select {
		case <-wk.done:
		default:
			v.reply, v.later = starting, true
			return false
		}
	}
	select {
	case <-wk.done:
	case <-ctx.Done():
		v.reply = answer{status: statusClientLeft}
		return false
	}
	switch {
	case wk.err == nil:
		return true
	case errors.Is(wk.err, route.ErrNotRunning):
		v.reply = notRunning
	default:
		v.reply, v.later = wakeFailed(wk.err), true
	}
	return false
}
