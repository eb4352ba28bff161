package proxy

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Backend connections are kept alive between requests, like nginx's
// upstream keepalive: a pool per app address, most recently used first,
// at most maxIdlePerBackend idle, each closed after backendIdleTimeout
// unused.
const (
	maxIdlePerBackend  = 128
	backendIdleTimeout = 90 * time.Second
	backendBufSize     = 16 << 10
)

// bconn is one connection to an app with its buffers.
type bconn struct {
	net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	idleAt  time.Time
	reused  bool
	backend *backendPool
	peek    [1]byte // quiet's buffer
	fd      int     // the socket's descriptor, for quiet (-1: none)
	lc      *loopConn
}

// backendPool is the idle connections to one address.
type backendPool struct {
	addr string
	mu   sync.Mutex
	idle []*bconn
	dead bool // dropped by closeIdle: connections given back are closed
	// held counts the connections client connections keep for their
	// next request because this pool was full (h1conn.hold).
	held atomic.Int64
}

// pools is every backend's pool, by address. byAddr is replaced whole
// under mu, never written in place, and published in view, so that a
// request finds its app's pool without a lock: that one lock, taken by
// every request, was 96% of the proxy's contended time under wrk at 64
// connections, and a thread the kernel preempted while holding it held
// up every request of every app (issue 41, docs/bench.md).
type pools struct {
	dialer net.Dialer
	mu     sync.Mutex
	byAddr map[string]*backendPool
	view   atomic.Pointer[map[string]*backendPool]
	closed bool
}

func (ps *pools) pool(addr string) *backendPool {
	if m := ps.view.Load(); m != nil {
		if bp := (*m)[addr]; bp != nil {
			return bp
		}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if bp := ps.byAddr[addr]; bp != nil {
		return bp
	}
	if ps.closed {
		return &backendPool{addr: addr, dead: true}
	}
	bp := &backendPool{addr: addr}
	m := make(map[string]*backendPool, len(ps.byAddr)+1)
	for a, b := range ps.byAddr {
		m[a] = b
	}
	m[addr] = bp
	ps.byAddr = m
	ps.view.Store(&m)
	return bp
}

// get returns an idle connection to addr, or dials a new one. With l,
// the taker is a task of that event loop: it gets only connections of
// that loop (loopConns its epoll waits on), and a new one is dialled
// without blocking the loop; without, only runtime-polled ones.
func (ps *pools) get(ctx context.Context, addr string, now time.Time, l *loop) (*bconn, error) {
	bp := ps.pool(addr)
	for {
		bp.mu.Lock()
		i := len(bp.idle) - 1
		for ; i >= 0; i-- {
			if c := bp.idle[i]; c.lc == nil && l == nil || c.lc != nil && c.lc.l == l {
				break
			}
		}
		if i < 0 {
			bp.mu.Unlock()
			if l != nil {
				return ps.dialLoop(l, bp)
			}
			return ps.dial(ctx, bp)
		}
		c := bp.idle[i]
		n := copy(bp.idle[i:], bp.idle[i+1:])
		bp.idle[i+n] = nil
		bp.idle = bp.idle[:i+n]
		bp.mu.Unlock()
		// Taken from the pool, c is this request's alone: closeIdle no
		// longer reaches it, so its descriptor may be asked directly.
		if now.Sub(c.idleAt) < backendIdleTimeout && c.quiet() {
			c.reused = true
			if c.lc != nil {
				c.lc.task = l.cur
			}
			return c, nil
		}
		c.Conn.Close()
	}
}

// dial opens a new connection to bp's address.
func (ps *pools) dial(ctx context.Context, bp *backendPool) (*bconn, error) {
	nc, err := ps.dialer.DialContext(ctx, "tcp", bp.addr)
	if err != nil {
		return nil, err
	}
	c := &bconn{Conn: nc, r: bufio.NewReaderSize(nc, backendBufSize), w: bufio.NewWriterSize(nc, backendBufSize), backend: bp, fd: -1}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { c.fd = int(fd) })
		}
	}
	return c, nil
}

// dialLoop opens a new connection to bp's address for the task of l
// running now.
func (ps *pools) dialLoop(l *loop, bp *backendPool) (*bconn, error) {
	lc, err := l.dial(bp.addr, ps.dialer.Timeout)
	if err != nil {
		return nil, err
	}
	return &bconn{Conn: lc, r: bufio.NewReaderSize(lc, backendBufSize), w: bufio.NewWriterSize(lc, backendBufSize), backend: bp, fd: lc.fd, lc: lc}, nil
}

// put returns c to its pool, or closes it when the pool is shut. When
// the pool is full it returns false and leaves c to the caller.
func (ps *pools) put(c *bconn, now time.Time) bool {
	if c.lc != nil && c.lc.gc.Load() != nil {
		c.Conn.Close() // it left its loop: never back in the loop's pool
		return true
	}
	bp := c.backend
	c.idleAt = now
	bp.mu.Lock()
	if !bp.dead && len(bp.idle) < maxIdlePerBackend {
		if c.lc != nil {
			c.lc.task = nil
		}
		bp.idle = append(bp.idle, c)
		bp.mu.Unlock()
		return true
	}
	dead := bp.dead
	bp.mu.Unlock()
	if dead {
		c.Conn.Close()
	}
	return dead
}

// reuse returns c for another request to addr, when it is to addr, not
// idle too long and quiet; otherwise it gives c to its pool or closes it
// and returns nil.
func (ps *pools) reuse(c *bconn, addr string, now time.Time) *bconn {
	switch {
	case c.backend.addr != addr:
		if !ps.put(c, c.idleAt) {
			c.Conn.Close()
		}
		return nil
	case now.Sub(c.idleAt) < backendIdleTimeout && c.quiet():
		c.reused = true
		return c
	default:
		c.Conn.Close()
		return nil
	}
}

// idleCount is how many idle connections the pools hold.
func (ps *pools) idleCount() int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	n := 0
	for _, bp := range ps.byAddr {
		bp.mu.Lock()
		n += len(bp.idle)
		bp.mu.Unlock()
	}
	return n
}

// closeIdle closes every idle connection and forgets the pools; with
// shut, connections given back later are closed too.
func (ps *pools) closeIdle(shut bool) {
	ps.mu.Lock()
	byAddr := ps.byAddr
	ps.byAddr = nil
	ps.view.Store(nil)
	if shut {
		ps.closed = true
	}
	ps.mu.Unlock()
	for _, bp := range byAddr {
		bp.mu.Lock()
		for _, c := range bp.idle {
			c.Conn.Close()
		}
		bp.idle, bp.dead = nil, true
		bp.mu.Unlock()
	}
}

// closeOf closes the idle connections of loop l, which stopped.
func (ps *pools) closeOf(l *loop) {
	ps.mu.Lock()
	byAddr := ps.byAddr
	ps.mu.Unlock()
	for _, bp := range byAddr {
		bp.mu.Lock()
		kept := bp.idle[:0]
		for _, c := range bp.idle {
			if c.lc != nil && c.lc.l == l {
				c.Conn.Close()
			} else {
				kept = append(kept, c)
			}
		}
		clear(bp.idle[len(kept):])
		bp.idle = kept
		bp.mu.Unlock()
	}
}

// quiet reports whether an idle connection has nothing to read: no bytes
// the app sent after its last answer (which the next request would take
// for its own answer) and no close. It asks the socket without waiting
// (MSG_PEEK|MSG_DONTWAIT), as nginx's keepalive module reads an idle
// upstream connection that becomes readable and closes it. The
// descriptor is asked directly, not through the runtime's poller (half
// the cost): only the request that took c from its pool holds it.
func (c *bconn) quiet() bool {
	if c.r.Buffered() > 0 {
		return false
	}
	if c.fd < 0 {
		return true
	}
	if c.lc != nil && c.lc.quiet() {
		// A loop's connection whose last read found all there was, and of
		// which epoll has told the loop nothing since (loopConn.quiet).
		return true
	}
	_, _, err := syscall.Recvfrom(c.fd, c.peek[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return err == syscall.EAGAIN
}
