package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var errTooManyFiles = syscall.EMFILE

// ListenConfig is where the proxy listens ([proxy.http] in config.toml).
type ListenConfig struct {
	// Address is host:port.
	Address string
	// CertFile and KeyFile, both or neither, are PEM files; with them the
	// proxy speaks TLS and offers h2.
	CertFile, KeyFile string
	// ReadHeaderTimeout bounds reading a request's headers, and a TLS
	// handshake (default 10 s): a client that trickles them cannot hold a
	// connection for long, and holds only its own goroutine meanwhile.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a kept-alive connection with no request (default
	// 2 min).
	IdleTimeout time.Duration
	// BodyTimeout ends a request whose body does not go on: each read of
	// it waits at most this long (default 60 s, nginx's
	// client_body_timeout); the client is answered 408.
	BodyTimeout time.Duration
	// SendTimeout ends a connection whose client takes nothing of its
	// answer: each write waits at most this long (default 60 s, nginx's
	// send_timeout).
	SendTimeout time.Duration
	// MaxConnections bounds the client connections open at once (default
	// 8192); one past it is answered 503 and closed, before anything of
	// it is read, so the daemon keeps descriptors for its own work.
	MaxConnections int
	// MaxConnectionsPerClient bounds those from one IP address (default
	// 256), so one client cannot take them all. Both caps count each
	// open HTTP/2 stream too, as nginx's limit_conn counts each HTTP/2
	// request: the connection whose stream goes past a client's cap is
	// stopped.
	MaxConnectionsPerClient int
	// H2C lets a plain (non-TLS) client speak HTTP/2 with prior knowledge
	// (off by default: one is answered 505). HTTP/2 over TLS is always on.
	H2C bool
	// Loops is how many event loops serve the connections (loop.go), each
	// on one thread at a time, connections dealt among them in turn
	// (default: one for every two Ps, at least one; nginx's workers, each
	// a process with its own epoll, are the model).
	Loops int
	// GoroutinePerConnection serves each connection on a goroutine of its
	// own, polled by the runtime, instead of as a task of an event loop:
	// the design before the loops, kept to measure beside them.
	GoroutinePerConnection bool
	// ShutdownGrace is how long Serve lets the requests in flight finish
	// once its context ends (default 10 s); then it closes their
	// connections, the client's and the app's, and returns.
	ShutdownGrace time.Duration
}

// The connection caps' defaults: nginx has worker_connections 512 per
// worker and no per-client cap unless limit_conn is set; the daemon is
// one process serving every app of the host.
const (
	defaultMaxConnections          = 8192
	defaultMaxConnectionsPerClient = 256
)

// Server is the proxy bound to its address, not yet serving. HTTP/1.x
// (plain or over TLS) is served by the proxy's own forwarder (h1.go);
// HTTP/2 over TLS, and h2c with prior knowledge when ListenConfig.H2C
// allows it, are handed to net/http (h2.go).
type Server struct {
	p   *Proxy
	cfg ListenConfig
	l   net.Listener
	tls *tls.Config

	h2  *http.Server
	h2l *connListener

	// loops serve the connections (none with GoroutinePerConnection),
	// the next one taking the next connection.
	loops []*loop
	next  int

	// ctx ends when the server gives up on open requests (it ends waits
	// on wakes, not the wakes).
	ctx    context.Context
	cancel context.CancelFunc

	closing  atomic.Bool
	mu       sync.Mutex
	conns    map[net.Conn]*connState // HTTP/1.x connections
	capMu    sync.Mutex              // not mu: closing under mu gives a place back
	open     int                     // client connections open, under capMu
	byClient map[netip.Addr]int      // of those, by address
	wg       sync.WaitGroup
}

// Listen binds the proxy's address (so a port in use fails at start,
// before anything else runs) and loads the certificate when there is one.
func (p *Proxy) Listen(ctx context.Context, cfg ListenConfig) (*Server, error) {
	if cfg.ReadHeaderTimeout <= 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 60 * time.Second
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = 60 * time.Second
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = defaultMaxConnections
	}
	if cfg.MaxConnectionsPerClient <= 0 {
		cfg.MaxConnectionsPerClient = defaultMaxConnectionsPerClient
	}
	s := &Server{p: p, cfg: cfg, conns: map[net.Conn]*connState{}, byClient: map[netip.Addr]int{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.h2 = s.newH2Server()
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("proxy TLS: give both a certificate and a key, or neither")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load the proxy's TLS certificate: %w", err)
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("proxy listen on %s: %w", cfg.Address, err)
	}
	if cfg.Loops <= 0 {
		cfg.Loops = max(1, runtime.GOMAXPROCS(0)/2)
		s.cfg.Loops = cfg.Loops
	}
	for i := 0; i < cfg.Loops && !cfg.GoroutinePerConnection; i++ {
		lp, err := newLoop()
		if err != nil {
			for _, lp := range s.loops {
				lp.close()
			}
			l.Close()
			return nil, fmt.Errorf("proxy: start its event loops: %w", err)
		}
		s.loops = append(s.loops, lp)
	}
	s.l = noDelayListener{l}
	s.h2l = newConnListener(l.Addr())
	return s, nil
}

// Addr is the address bound (useful when the port was 0).
func (s *Server) Addr() net.Addr { return s.l.Addr() }

// Serve answers requests until ctx ends, then stops accepting and gives
// open requests up to 10 s to finish.
func (s *Server) Serve(ctx context.Context) error {
	h2done := make(chan error, 1)
	go func() { h2done <- s.h2.Serve(s.h2l) }()
	for _, lp := range s.loops {
		done := make(chan struct{})
		go func() { lp.run(); close(done) }()
		defer func() {
			lp.stop()
			<-done
			s.p.pools.closeOf(lp)
		}()
	}
	acceptDone := make(chan error, 1)
	go func() { acceptDone <- s.accept() }()
	var err error
	select {
	case err = <-acceptDone:
		err = fmt.Errorf("proxy: %w", err)
	case <-ctx.Done():
		s.closing.Store(true)
		s.l.Close()
		// The accept loop ends before wg.Wait below: a connection it took
		// just before the close would otherwise be added to wg while
		// Wait runs (the race detector's report in CI).
		<-acceptDone
	}
	s.closing.Store(true)
	s.l.Close()
	s.closeIdle()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	h2err := make(chan error, 1)
	go func() {
		e := s.h2.Shutdown(sctx)
		if errors.Is(e, context.DeadlineExceeded) {
			e = s.h2.Close()
		}
		h2err <- e
	}()
	h1done := make(chan struct{})
	go func() { s.wg.Wait(); close(h1done) }()
	select {
	case <-h1done:
	case <-sctx.Done():
		s.cancel()
		s.closeAll()
		<-h1done
	}
	s.cancel()
	if e := <-h2err; err == nil {
		err = e
	}
	<-h2done
	return err
}

// accept takes connections until the listener closes.
func (s *Server) accept() error {
	var delay time.Duration
	for {
		c, err := s.l.Accept()
		if err != nil {
			if s.closing.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// Out of file descriptors, say: back off as net/http does.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.wg.Add(1)
		admitted, limit := s.admit(c)
		if limit != "" {
			go s.turnAway(c, limit)
			continue
		}
		if len(s.loops) > 0 {
			if lc, err := adopt(admitted.(*countedConn).Conn); err == nil {
				admitted.(*countedConn).Conn = lc
				lp := s.loops[s.next%len(s.loops)]
				s.next++
				lp.start(func(t *task) {
					lc.l, lc.task = lp, t
					if err := lp.add(lc); err != nil {
						// Out of memory for epoll, say: this one connection ends.
						lc.l = nil
						s.wg.Done()
						admitted.Close()
						return
					}
					s.serveConn(admitted)
				})
				continue
			}
		}
		go s.serveConn(admitted)
	}
}

// admit counts c against the connection caps: the connection to serve,
// which gives its place back when closed, or the cap it is past.
func (s *Server) admit(c net.Conn) (net.Conn, string) {
	addr := remoteIP(c)
	if limit := s.take(addr); limit != "" {
		return nil, limit
	}
	return &countedConn{Conn: c, release: func() { s.give(addr) }}, ""
}

// take counts one connection or HTTP/2 stream from addr against the
// caps, or returns the cap it is past.
func (s *Server) take(addr netip.Addr) string {
	s.capMu.Lock()
	defer s.capMu.Unlock()
	switch {
	case s.open >= s.cfg.MaxConnections:
		return limitConnections
	case s.byClient[addr] >= s.cfg.MaxConnectionsPerClient:
		return limitClientConnections
	}
	s.open++
	s.byClient[addr]++
	return ""
}

// give gives back a place take gave.
func (s *Server) give(addr netip.Addr) {
	s.capMu.Lock()
	defer s.capMu.Unlock()
	s.open--
	if s.byClient[addr]--; s.byClient[addr] <= 0 {
		delete(s.byClient, addr)
	}
}

// turnAway answers a connection past a cap 503 and closes it, without
// reading from it (over TLS, it is closed only: an answer would need a
// handshake).
func (s *Server) turnAway(c net.Conn, limit string) {
	defer s.wg.Done()
	defer c.Close()
	s.p.tripped(limit)
	if s.tls != nil {
		return
	}
	a := tooManyConnections
	if limit == limitClientConnections {
		a = tooManyFromClient
	}
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	w := bufio.NewWriterSize(c, 512)
	writeAnswer(w, a, s.p.retryAt, true)
	_ = w.Flush()
}

// countedConn gives its place under the caps back when first closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// serveConn tells the protocol and serves the connection.
func (s *Server) serveConn(c net.Conn) {
	defer s.wg.Done()
	st := new(connState)
	st.idle.Store(true)
	s.mu.Lock()
	s.conns[c] = st
	s.mu.Unlock()
	handedOff := false
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		if !handedOff {
			c.Close()
		}
	}()
	if s.closing.Load() {
		return
	}
	rw, isTLS, sni := c, false, ""
	if s.tls != nil {
		tc := tls.Server(c, s.tls)
		_ = c.SetDeadline(time.Now().Add(s.cfg.ReadHeaderTimeout))
		if err := tc.HandshakeContext(s.ctx); err != nil {
			return
		}
		_ = c.SetDeadline(time.Time{})
		st := tc.ConnectionState()
		if st.NegotiatedProtocol == "h2" {
			leaveLoop(c)
			handedOff = s.h2l.hand(tc)
			return
		}
		rw, isTLS, sni = tc, true, sniName(st.ServerName)
	}
	tc := &timedConn{Conn: rw, writeIdle: s.cfg.SendTimeout, p: s.p}
	r := readerPool.Get().(*bufio.Reader)
	r.Reset(tc)
	defer func() {
		r.Reset(nil)
		readerPool.Put(r)
	}()
	if !isTLS {
		// h2c with prior knowledge opens with "PRI * HTTP/2.0"; every
		// HTTP/1.x request line is longer than four bytes.
		_ = c.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if b, err := r.Peek(4); err != nil {
			return
		} else if string(b) == "PRI " {
			if !s.cfg.H2C {
				// An h2c client with prior knowledge, and h2c is off: it
				// gets an HTTP/1.1 answer it may not read, and is closed.
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				w := bufio.NewWriterSize(c, 512)
				writeAnswer(w, noH2C, "", true)
				_ = w.Flush()
				return
			}
			_ = c.SetReadDeadline(time.Time{})
			leaveLoop(c)
			handedOff = s.h2l.hand(&peekedConn{Conn: c, r: r})
			if handedOff {
				r = bufio.NewReader(nil) // the handed connection keeps the pooled one
			}
			return
		}
	}
	s.serveH1(tc, r, st, isTLS, sni)
}

// leaveLoop takes c's task out of its loop, when c is a loop's: for
// net/http, whose goroutines will read and write it.
func leaveLoop(c net.Conn) {
	if lc := lcOf(c); lc != nil && lc.task != nil {
		lc.task.leave(lc)
	}
}

// closeIdle closes the connections waiting for a request.
func (s *Server) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, st := range s.conns {
		if st.idle.Load() {
			c.Close()
		}
	}
}

// closeAll closes every connection, and the app connection an answer
// comes on: a body is not timed, and a task or goroutine waiting on a
// silent app would otherwise never see its client's close.
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c, st := range s.conns {
		c.Close()
		if a := st.app.Load(); a != nil {
			a.Close()
		}
	}
}

// connState is what shutdown needs of an HTTP/1.x connection.
type connState struct {
	idle atomic.Bool // between requests
	// app is the app connection the answer's body comes on, while it
	// does.
	app atomic.Pointer[bconn]
}

// connListener is a net.Listener fed by hand: the connections Server
// gives net/http (HTTP/2).
type connListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// hand passes c to whoever accepts; false when the listener is closed.
func (l *connListener) hand(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// peekedConn is a connection whose first bytes sit in r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// noDelayListener sets TCP_NODELAY on every accepted connection: proxied
// requests are small writes that must not wait on Nagle.
type noDelayListener struct{ net.Listener }

func (l noDelayListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}
