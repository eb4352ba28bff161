// Package raw is nibrunnerd's relay for apps' raw ports ([proxy.raw]):
// whatever arrives, tcp or udp, on listen_address at an app's host port
// + index is carried, unread, to the same port's guest port.
//
// A relay rather than a DNAT rule, so that a raw port can do what the
// HTTP proxy does: wake an on-request app that sleeps (a TCP connection
// is held until the guest answers, then spliced — the client sees a slow
// banner, not a reset; UDP datagrams are queued, bounded, and delivered
// in order after the wake), and count as its traffic (bytes in, and open
// connections, keep it awake). A port of an app that is stopped is not
// bound at all, so the kernel refuses what arrives the way any host
// would: a TCP reset, an ICMP port unreachable.
//
// The daemon replaces the relay's table whole (ApplyPorts, from
// nibrunner/route); the relay opens and closes its sockets to match.
package raw

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
	"alpnib.dev/nibrunner/route"
)

// Waker brings a sleeping app up and returns once its health check has
// passed (the daemon satisfies it).
type Waker interface {
	Wake(ctx context.Context, app string) error
}

// Recorder is told what the relay carries (the Prometheus metrics
// implement it).
type Recorder interface {
	// RawConnection is one TCP connection or UDP flow ended: relayed,
	// refused (a wake that failed, a guest that did not answer) or failed.
	RawConnection(app, proto, outcome string, in, out int64)
	// RawOpen moves the count of open connections or flows.
	RawOpen(app, proto string, delta int)
	// RawDropped is UDP datagrams dropped in front of a waking app.
	RawDropped(app string, n int)
	// WakeWaited is a wake the relay began (via "tcp" or "udp").
	WakeWaited(via string, d time.Duration, err error)
	// RawLimit is n trips of a cap or timeout (limits.go): connections
	// ended or refused, datagrams dropped.
	RawLimit(limit string, n int)
}

// Options tune a Relay; only ListenAddress is required.
type Options struct {
	// ListenAddress is [proxy.raw] listen_address: the one address raw
	// ports are bound on.
	ListenAddress string
	// WakeTimeout bounds one wake (default 60 s).
	WakeTimeout time.Duration
	// DialTimeout bounds connecting to a guest (default 5 s).
	DialTimeout time.Duration
	// QueueDatagrams and QueueBytes bound what one UDP flow queues while
	// its app wakes (defaults 256 and 1 MiB); past either, datagrams are
	// dropped, as a full socket buffer would.
	QueueDatagrams int
	QueueBytes     int
	// PortQueueBytes bounds what all the flows of one port queue
	// together while its app wakes (default 4 MiB; each datagram counts
	// at least 64 bytes, for its bookkeeping): without it MaxFlows flows
	// could each queue QueueBytes, 4 GiB a port.
	PortQueueBytes int
	// TCPIdleTimeout ends a TCP connection nothing crossed either way
	// for this long (default 10 min, nginx's stream proxy_timeout).
	TCPIdleTimeout time.Duration
	// MaxTCPConnections bounds the TCP connections open across every
	// port (default 4096); one past it is reset at once.
	MaxTCPConnections int
	// MaxTCPConnectionsPerClient bounds those from one IP address, across
	// every port (default 256, as the HTTP proxy's
	// MaxConnectionsPerClient), so one client cannot take them all.
	MaxTCPConnectionsPerClient int
	// MaxTCPConnectionsPerApp bounds those to one app, across its ports
	// (default a quarter of MaxTCPConnections), so an app held at its
	// share leaves the rest to the others.
	MaxTCPConnectionsPerApp int
	// FlowIdle ends a UDP flow nothing crossed for this long (default
	// 2 min, about conntrack's stream timeout).
	FlowIdle time.Duration
	// MaxFlows bounds the UDP flows one port keeps (default 4096), and
	// MaxFlowsPerClient those of one port from one IP address (default
	// 256, as MaxTCPConnectionsPerClient, and at most MaxFlows), so that
	// one client sending from many source ports cannot take every flow
	// of a port. Past either, a datagram that would begin a flow is
	// dropped, as a full conntrack table drops it.
	MaxFlows          int
	MaxFlowsPerClient int
	// Now is the clock traffic is measured by (default time.Now).
	Now func() time.Time
	// Logf logs one line (default log.Printf).
	Logf func(format string, args ...any)
	// Recorder, when set, is told what the relay carries.
	Recorder Recorder
}

// Relay carries raw ports. It implements route.PortRouter.
type Relay struct {
	opts   Options
	waker  atomic.Pointer[Waker]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	ports  map[int]*port // by host port
	gen    *generation
	wakes  map[string]*wake
	meters meter.Set
	closed bool

	tcp tcpCount // TCP connections open, against the caps (limits.go)
}

// generation is what the relay knows of one table: which of its sleeping
// apps it has woken since (their ports still say sleeping until the
// daemon's next table).
type generation struct {
	awake sync.Map // app → true
}

var _ route.PortRouter = (*Relay)(nil)

// New returns a relay with no ports bound.
func New(opts Options) *Relay {
	if opts.WakeTimeout <= 0 {
		opts.WakeTimeout = 60 * time.Second
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.QueueDatagrams <= 0 {
		opts.QueueDatagrams = 256
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = 1 << 20
	}
	if opts.FlowIdle <= 0 {
		opts.FlowIdle = 2 * time.Minute
	}
	if opts.PortQueueBytes <= 0 {
		opts.PortQueueBytes = 4 << 20
	}
	if opts.TCPIdleTimeout <= 0 {
		opts.TCPIdleTimeout = 10 * time.Minute
	}
	if opts.MaxTCPConnections <= 0 {
		opts.MaxTCPConnections = 4096
	}
	if opts.MaxTCPConnectionsPerClient <= 0 {
		opts.MaxTCPConnectionsPerClient = defaultMaxTCPConnectionsPerClient
	}
	if opts.MaxTCPConnectionsPerApp <= 0 {
		opts.MaxTCPConnectionsPerApp = max(1, opts.MaxTCPConnections/4)
	}
	if opts.MaxFlows <= 0 {
		opts.MaxFlows = 4096
	}
	if opts.MaxFlowsPerClient <= 0 {
		opts.MaxFlowsPerClient = min(defaultMaxTCPConnectionsPerClient, opts.MaxFlows)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	r := &Relay{opts: opts, ports: map[int]*port{}, gen: &generation{}, wakes: map[string]*wake{}}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r
}

// SetWaker gives the relay what wakes sleeping apps. Until it has one, a
// sleeping app's raw ports refuse what arrives.
func (r *Relay) SetWaker(w Waker) { r.waker.Store(&w) }

// ApplyPorts implements route.PortRouter: it binds the ports of apps up
// or asleep, updates those already bound, and closes the rest (and those
// of stopped apps), so the kernel refuses what arrives there. A port
// that cannot be bound is reported and the others are still applied.
func (r *Relay) ApplyPorts(_ context.Context, ports []route.Port) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("raw relay: closed")
	}
	r.gen = &generation{}
	want := map[int]route.Port{}
	for _, p := range ports {
		if p.State == route.Up || p.State == route.Sleeping {
			want[p.HostPort] = p
		}
	}
	for hp, pt := range r.ports {
		if w, ok := want[hp]; !ok || w.AppID != pt.route().AppID {
			pt.close()
			delete(r.ports, hp)
		}
	}
	var errs []error
	for hp, p := range want {
		if pt, ok := r.ports[hp]; ok {
			pt.set(p)
			continue
		}
		pt, err := r.open(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s port %d: %w", p.AppID, p.Index, err))
			continue
		}
		r.ports[hp] = pt
	}
	return errors.Join(errs...)
}

// Close unbinds every port, ends every connection and flow, and waits
// for them. Wakes under way are abandoned.
func (r *Relay) Close() {
	r.mu.Lock()
	r.closed = true
	for hp, pt := range r.ports {
		pt.close()
		delete(r.ports, hp)
	}
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// Activity is when raw traffic last reached app (bytes in from a client,
// a connection opening or closing) and whether a TCP connection to it is
// open now; the daemon's traffic-idle sleep reads it beside the proxy's.
func (r *Relay) Activity(app string) (last time.Time, busy bool) {
	return r.meters.Activity(app)
}

// Addrs is the addresses bound, by host port (for tests).
func (r *Relay) Addrs() map[int]net.Addr {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[int]net.Addr{}
	for hp, pt := range r.ports {
		out[hp] = pt.tcp.Addr()
	}
	return out
}

// open binds p's TCP and UDP sockets and starts serving them.
func (r *Relay) open(p route.Port) (*port, error) {
	addr := net.JoinHostPort(r.opts.ListenAddress, strconv.Itoa(p.HostPort))
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	ul, err := net.ListenPacket("udp", addr)
	if err != nil {
		tl.Close()
		return nil, err
	}
	pt := &port{r: r, tcp: tl.(*net.TCPListener), udp: ul.(*net.UDPConn), flows: map[netip.AddrPort]*flow{}, byClient: map[netip.Addr]int{}, done: make(chan struct{})}
	pt.set(p)
	r.wg.Add(2)
	go pt.acceptTCP()
	go pt.readUDP()
	return pt, nil
}

// port is one bound raw port.
type port struct {
	r    *Relay
	cur  atomic.Pointer[route.Port]
	tcp  *net.TCPListener
	udp  *net.UDPConn
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	flows map[netip.AddrPort]*flow // by client address
	// byClient counts flows by client IP (an IPv4-mapped one as IPv4),
	// against MaxFlowsPerClient.
	byClient map[netip.Addr]int
	conns    map[net.Conn]struct{}
	queued   int // bytes all flows queue, against PortQueueBytes, under mu
}

func (pt *port) route() route.Port { return *pt.cur.Load() }
func (pt *port) set(p route.Port)  { pt.cur.Store(&p) }
func (pt *port) closing() bool {
	select {
	case <-pt.done:
		return true
	default:
		return false
	}
}

// close unbinds the port and ends its connections and flows.
func (pt *port) close() {
	pt.once.Do(func() {
		close(pt.done)
		pt.tcp.Close()
		pt.udp.Close()
		pt.mu.Lock()
		for c := range pt.conns {
			c.Close()
		}
		flows := make([]*flow, 0, len(pt.flows))
		for _, f := range pt.flows {
			flows = append(flows, f)
		}
		pt.mu.Unlock()
		for _, f := range flows {
			f.end()
		}
	})
}

// ready waits until app may be reached: at once when it is up or was
// woken since this table; otherwise through a wake (shared by every
// connection and datagram that arrives meanwhile).
func (r *Relay) ready(ctx context.Context, p route.Port, via string) error {
	if p.State == route.Up {
		return nil
	}
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	if _, ok := gen.awake.Load(p.AppID); ok {
		return nil
	}
	wk := r.startWake(p.AppID, via)
	select {
	case <-wk.done:
		return wk.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wake is one wake under way; err is set before done closes.
type wake struct {
	done chan struct{}
	err  error
}

// startWake joins the wake under way for app or begins one, on the
// relay's own context: a client that leaves does not cancel it.
func (r *Relay) startWake(app, via string) *wake {
	r.mu.Lock()
	defer r.mu.Unlock()
	if wk := r.wakes[app]; wk != nil {
		return wk
	}
	wk := &wake{done: make(chan struct{})}
	r.wakes[app] = wk
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		began := r.opts.Now()
		err := route.ErrNotRunning
		if w := r.waker.Load(); w != nil {
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.WakeTimeout)
			err = (*w).Wake(ctx, app)
			cancel()
		}
		if rec := r.opts.Recorder; rec != nil {
			rec.WakeWaited(via, r.opts.Now().Sub(began), err)
		}
		if err != nil && !errors.Is(err, route.ErrNotRunning) {
			r.opts.Logf("nibrunnerd: raw relay: wake %s: %v", app, err)
		}
		r.mu.Lock()
		if err == nil {
			r.gen.awake.Store(app, true)
		}
		delete(r.wakes, app)
		wk.err = err
		close(wk.done)
		r.mu.Unlock()
	}()
	return wk
}
