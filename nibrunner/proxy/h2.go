package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// HTTP/2 (TLS ALPN h2, and h2c with prior knowledge when ListenConfig.H2C
// allows it) is served by net/http's server, which is x/net/http2's server
// bundled. What its options give is set in newH2Server; what they do not
// (a timeout per stream between two reads of a body or two writes of an
// answer, streams counted against a client's budget, a stop for the
// connection that goes past it) is added here, around each stream.

// maxStreamsPerConnection is how many streams one HTTP/2 connection may
// have open at once: nginx's http2_max_concurrent_streams default.
const maxStreamsPerConnection = 128

// maxHeaderBytes bounds an HTTP/2 request's header list as the HTTP/1.x
// path bounds a head (64 KiB).
const maxHeaderBytes = 64 << 10

// newH2Server is the net/http server that serves the HTTP/2 connections
// s hands it.
func (s *Server) newH2Server() *http.Server {
	hs := &http.Server{
		Handler:           http.HandlerFunc(s.serveH2),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: maxStreamsPerConnection,
			// A connection the client reads nothing of is closed, as a
			// send_timeout would close it; a stream whose window the client
			// keeps shut is the stream watch's (sendTimeout below).
			WriteByteTimeout: s.cfg.SendTimeout,
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			hc := &h2conn{addr: remoteIP(c)}
			ctx, hc.stop = context.WithCancel(ctx)
			return context.WithValue(ctx, h2connKey{}, hc)
		},
	}
	protos := new(http.Protocols)
	protos.SetHTTP2(true)
	if s.cfg.H2C {
		protos.SetUnencryptedHTTP2(true)
	}
	hs.Protocols = protos
	return hs
}

// h2conn is one HTTP/2 connection: its client's address, and what stops
// it (every stream's context ends with it).
type h2conn struct {
	addr    netip.Addr
	stop    context.CancelFunc
	stopped atomic.Bool
}

type h2connKey struct{}

// remoteIP is the address c came from, without its port.
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// serveH2 serves one HTTP/2 stream. Each open stream takes a place under
// the connection caps, as nginx's limit_conn counts each HTTP/2 request
// as a connection: a stream past the client's cap is answered 503 and its
// connection is stopped (GOAWAY, its other streams reset, their app
// connections closed); one past the host's cap is answered 503 alone.
func (s *Server) serveH2(w http.ResponseWriter, r *http.Request) {
	hc, _ := r.Context().Value(h2connKey{}).(*h2conn)
	if hc == nil {
		panic(http.ErrAbortHandler) // not a connection s handed over
	}
	if limit := s.take(hc.addr); limit != "" {
		s.p.tripped(limit)
		a := tooManyConnections
		if limit == limitClientConnections {
			a = tooManyFromClient
			// net/http's HTTP/2 server takes this field (never sent) as a
			// GOAWAY once this answer is written.
			w.Header().Set("Connection", "close")
		}
		start := s.p.opts.Now()
		w.Header().Set("Retry-After", s.p.retryAt)
		reply(w, a)
		_ = http.NewResponseController(w).Flush()
		if limit == limitClientConnections {
			hc.stopped.Store(true)
			hc.stop()
		}
		s.p.logH2(r, requestLog{status: a.status, bytesOut: int64(len(a.text) + 1), start: start})
		return
	}
	defer s.give(hc.addr)
	s.p.serveStream(w, r, streamLimits{body: s.cfg.BodyTimeout, send: s.cfg.SendTimeout, conn: hc})
}

// streamLimits are what bounds one HTTP/2 stream: the longest wait for
// its body to go on, and for its answer to be taken (0: none), and its
// connection (nil: none known).
type streamLimits struct {
	body, send time.Duration
	conn       *h2conn
}

// opWatch ends an operation that waits longer than its timeout: a read of
// a stream's body, a write of its answer. Only a wait under way is
// timed, from when it began, as nginx times "a period between two
// successive read (write) operations": a stream the app is slow to
// answer is never the client's fault. One timer serves the stream's
// life; it is armed when an operation begins and it is not, and when it
// fires early it is set again for the wait under way.
type opWatch struct {
	timeout time.Duration
	since   atomic.Int64 // when the wait under way began (UnixNano); 0: none
	armed   atomic.Bool
	mu      sync.Mutex // held while arming and firing; stop takes it
	t       *time.Timer
	fire    func()
	fired   atomic.Bool
	done    bool
}

func newOpWatch(timeout time.Duration, fire func()) *opWatch {
	if timeout <= 0 {
		return nil
	}
	return &opWatch{timeout: timeout, fire: fire}
}

// begin marks an operation begun now.
func (o *opWatch) begin() {
	if o == nil {
		return
	}
	o.since.Store(time.Now().UnixNano())
	if o.armed.CompareAndSwap(false, true) {
		o.arm(o.timeout)
	}
}

// end marks it over.
func (o *opWatch) end() {
	if o != nil {
		o.since.Store(0)
	}
}

func (o *opWatch) arm(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.done:
	case o.t == nil:
		o.t = time.AfterFunc(d, o.check)
	default:
		o.t.Reset(d)
	}
}

// check runs when the timer fires: it ends the wait under way that has
// lasted the timeout, or waits on for one that has not.
func (o *opWatch) check() {
	o.armed.Store(false)
	since := o.since.Load()
	if since == 0 {
		return // the next operation arms it again
	}
	if left := o.timeout - time.Since(time.Unix(0, since)); left > 0 {
		if o.armed.CompareAndSwap(false, true) {
			o.arm(left)
		}
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done || o.fired.Load() {
		return
	}
	o.fired.Store(true)
	o.fire()
}

// stop ends the watch; once it returns, fire is not running and never
// will.
func (o *opWatch) stop() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = true
	if o.t != nil {
		o.t.Stop()
	}
}

// timedOut reports whether the watch ended a wait.
func (o *opWatch) timedOut() bool { return o != nil && o.fired.Load() }
