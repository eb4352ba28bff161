package raw

import (
	"io"
	"net"
	"sync"
	"time"
)

// acceptTCP takes the port's connections until it is closed.
func (pt *port) acceptTCP() {
	defer pt.r.wg.Done()
	var delay time.Duration
	for {
		c, err := pt.tcp.AcceptTCP()
		if err != nil {
			if pt.closing() {
				return
			}
			// Out of file descriptors, say: back off and go on.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			select {
			case <-time.After(delay):
			case <-pt.done:
				return
			}
			continue
		}
		delay = 0
		release, limit := pt.r.admitTCP(clientAddr(c), pt.route().AppID)
		if limit != "" {
			// Past a cap: reset at once, as a full backlog would, so the
			// daemon keeps descriptors for its own work and a client
			// retries later rather than waits on a connection that will
			// never be carried.
			_ = c.SetLinger(0)
			c.Close()
			pt.r.limit(limit, 1)
			continue
		}
		_ = c.SetNoDelay(true)
		pt.mu.Lock()
		if pt.conns == nil {
			pt.conns = map[net.Conn]struct{}{}
		}
		pt.conns[c] = struct{}{}
		pt.mu.Unlock()
		pt.r.wg.Add(1)
		go pt.serveTCP(c, release)
	}
}

// serveTCP carries one connection: held while its app wakes, then
// spliced to the guest both ways until both sides are done; release
// gives its place under the caps back.
func (pt *port) serveTCP(c *net.TCPConn, release func()) {
	r := pt.r
	defer r.wg.Done()
	defer func() {
		pt.mu.Lock()
		delete(pt.conns, c)
		pt.mu.Unlock()
		c.Close()
	}()
	p := pt.route()
	m := r.meters.Of(p.AppID)
	// The recorder hears of the connection once the app counts as busy
	// with it, and of its end once it no longer does, so what it reports
	// is already true of the meter.
	rec := r.opts.Recorder
	m.Begin(r.opts.Now())
	if rec != nil {
		rec.RawOpen(p.AppID, "tcp", 1)
	}
	defer func() {
		m.End(r.opts.Now())
		release()
		if rec != nil {
			rec.RawOpen(p.AppID, "tcp", -1)
		}
	}()
	if err := r.ready(r.ctx, p, "tcp"); err != nil {
		r.refuse(c, p.AppID)
		return
	}
	g, err := net.DialTimeout("tcp", pt.route().Addr, r.opts.DialTimeout)
	if err != nil {
		r.opts.Logf("nibrunnerd: raw relay: app %s port %d: %v", p.AppID, p.Index, err)
		r.refuse(c, p.AppID)
		return
	}
	gc := g.(*net.TCPConn)
	pt.mu.Lock()
	pt.conns[gc] = struct{}{}
	pt.mu.Unlock()
	if pt.closing() {
		// The port closed during the dial, after it closed what it held.
		gc.Close()
		return
	}
	defer func() {
		pt.mu.Lock()
		delete(pt.conns, gc)
		pt.mu.Unlock()
		gc.Close()
	}()
	stop := watchIdle(c, gc, r.opts.TCPIdleTimeout, func() {
		r.opts.Logf("nibrunnerd: raw relay: app %s port %d: a connection from %v carried nothing for %v (tcp_idle_timeout_ms); closed", p.AppID, p.Index, c.RemoteAddr(), r.opts.TCPIdleTimeout)
		r.limit(limitTCPIdle, 1)
		c.Close()
		gc.Close()
	})
	in, out := splice(c, gc)
	stop()
	if rec != nil {
		rec.RawConnection(p.AppID, "tcp", "relayed", in, out)
	}
}

// refuse resets c: the client sees what a closed port would say.
func (r *Relay) refuse(c *net.TCPConn, app string) {
	_ = c.SetLinger(0)
	if rec := r.opts.Recorder; rec != nil {
		rec.RawConnection(app, "tcp", "refused", 0, 0)
	}
}

// splice copies both ways, passing on each side's close as a half-close,
// and returns once both directions are done. Both directions are
// io.Copy between TCP connections, which the kernel splices without the
// bytes crossing into the relay. Traffic needs no count per read: an open
// connection keeps its app busy, and its end is traffic.
func splice(client, guest *net.TCPConn) (in, out int64) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var err error
		if in, err = io.Copy(guest, client); err != nil {
			// Not a close but a failure (a reset, say): end both ways.
			client.Close()
			guest.Close()
			return
		}
		_ = guest.CloseWrite()
	}()
	out, err := io.Copy(client, guest)
	if err != nil {
		client.Close()
		guest.Close()
	} else {
		_ = client.CloseWrite()
	}
	wg.Wait()
	return in, out
}
