// Package proxy is nibrunnerd's HTTP front door: it routes each request by
// its Host header to the app that answers for that hostname, wakes an
// on-request app that sleeps (the activator), and measures each app's
// traffic so the daemon knows when an app has gone idle.
//
// The daemon owns the routing table and replaces it whole (Apply); the
// proxy reads it without locks from an immutable map behind an atomic
// pointer, so a request never sees half a table. Every answer the proxy
// gives itself is a short plain-text sentence rendered in one place
// (messages.go).
package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
	"alpnib.dev/nibrunner/route"
)

// Waker brings a sleeping app up and returns once its health check has
// passed (*daemon.Daemon satisfies it). It returns route.ErrNotRunning
// for an app that is not meant to run.
type Waker interface {
	Wake(ctx context.Context, app string) error
}

// Locator is what a Waker may also do: say where a woken app answers now
// (*daemon.Daemon does). The activator asks it after a wake, since the
// route it holds was made while the app slept.
type Locator interface {
	Backend(app string) string
}

// Options tune a Proxy; the zero value is usable.
type Options struct {
	// Waker wakes sleeping apps; it may also be given later (SetWaker),
	// since the daemon that wakes needs the proxy to exist first.
	Waker Waker
	// WakeTimeout bounds one wake (default 60 s: a cold boot under
	// software emulation takes seconds, a restore less).
	WakeTimeout time.Duration
	// RetryAfter is what a 503 tells the client to wait (default 5 s).
	RetryAfter time.Duration
	// BackendHost is the address apps' host ports listen on (default
	// 127.0.0.1), for a route that names no Addr.
	BackendHost string
	// DialTimeout bounds connecting to an app (default 5 s), a wait for
	// a place among its connections included.
	DialTimeout time.Duration
	// MaxBackendConnsPerApp bounds the connections to one app in use at
	// once, over HTTP/1.x and HTTP/2 together (default 512): a request
	// that finds none free within DialTimeout is answered 503. Idle
	// kept-alive connections are bounded apart (128 per app address).
	MaxBackendConnsPerApp int
	// ResponseHeaderTimeout bounds the wait for an app to begin its
	// answer once the request (and any body) is sent: past it the client
	// gets 504 and the app's connection is closed (default 60 s, nginx's
	// proxy_read_timeout). Only the head is timed: a body, a stream of
	// server-sent events or an upgraded connection (WebSocket) goes on
	// as long as the app sends it.
	ResponseHeaderTimeout time.Duration
	// Now is the clock traffic is measured by (default time.Now).
	Now func() time.Time
	// Logf logs one line (default log.Printf).
	Logf func(format string, args ...any)
	// AccessLog, when set, is written one line per request, in one Write
	// each: a JSON object as log/slog's JSONHandler writes one (time,
	// level, msg "request") with the request's id, app, client, method,
	// host, target, proto, status, body bytes each way and duration in
	// nanoseconds. It must be safe for concurrent use and should buffer
	// (AccessLogWriter does both).
	AccessLog io.Writer
	// Recorder, when set, is told of every request (metrics).
	Recorder Recorder
}

// Proxy routes requests to apps. It implements route.Router (Apply) and
// daemon.Traffic (Activity), and is an http.Handler.
type Proxy struct {
	opts    Options
	table   atomic.Pointer[table]
	waker   atomic.Pointer[Waker]
	rp      *httputil.ReverseProxy // the HTTP/2 path
	pools   pools                  // the HTTP/1.x path's app connections
	slots   appSlots               // the connections to each app in use
	meters  meter.Set
	wakes   activator
	ctx     context.Context
	cancel  context.CancelFunc
	retryAt string
	// wallClock says opts.Now is time.Now: a loop's tasks may then read
	// the loop's time instead (h1conn.now).
	wallClock bool
}

// table is one routing table, never changed once published.
type table struct {
	routes map[string]route.Route // by lower-case hostname
	// awake holds apps the proxy woke since this table was applied: their
	// route still says sleeping until the daemon's next pass, but they
	// answer now, at the address kept here ("" for the route's own).
	awake sync.Map // app → string
}

var (
	_ route.Router = (*Proxy)(nil)
	_ http.Handler = (*Proxy)(nil)
)

// New returns a proxy with an empty routing table: every hostname answers
// 404 until the daemon applies its first table.
func New(opts Options) *Proxy {
	if opts.WakeTimeout <= 0 {
		opts.WakeTimeout = 60 * time.Second
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 5 * time.Second
	}
	if opts.BackendHost == "" {
		opts.BackendHost = "127.0.0.1"
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	if opts.MaxBackendConnsPerApp <= 0 {
		opts.MaxBackendConnsPerApp = defaultMaxBackendConnsPerApp
	}
	if opts.ResponseHeaderTimeout <= 0 {
		opts.ResponseHeaderTimeout = 60 * time.Second
	}
	wallClock := opts.Now == nil
	if wallClock {
		opts.Now = time.Now
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	p := &Proxy{opts: opts, wallClock: wallClock, retryAt: strconv.Itoa(int((opts.RetryAfter + time.Second - 1) / time.Second))}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.table.Store(&table{routes: map[string]route.Route{}})
	if opts.Waker != nil {
		p.SetWaker(opts.Waker)
	}
	p.wakes.inflight = map[string]*wake{}
	p.slots.max = opts.MaxBackendConnsPerApp
	p.pools.dialer = net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Out keeps the inbound Host: the app sees the name it was
			// asked by, not 127.0.0.1.
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = pr.In.Context().Value(backendKey{}).(string)
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			Proxy:                 nil, // never through an HTTP_PROXY from the environment
			DialContext:           (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          1024,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ResponseHeaderTimeout: opts.ResponseHeaderTimeout,
		},
		ErrorHandler: p.backendFailed,
		BufferPool:   &bufferPool{},
	}
	return p
}

// SetWaker gives the proxy what wakes sleeping apps. Until it has one, a
// sleeping app's hostnames answer 503 "This app is not running.".
func (p *Proxy) SetWaker(w Waker) { p.waker.Store(&w) }

// Close abandons wakes under way (their callers get 503) and idle
// connections to apps.
func (p *Proxy) Close() {
	p.cancel()
	p.rp.Transport.(*http.Transport).CloseIdleConnections()
	p.pools.closeIdle(true)
}

// Apply implements route.Router: it replaces the routing table whole.
// Hostnames are matched case-insensitively. Were two routes to name one
// hostname (the document's validation should prevent it), the first
// keeps it and the conflict is logged.
func (p *Proxy) Apply(_ context.Context, routes []route.Route) error {
	t := &table{routes: make(map[string]route.Route, len(routes))}
	for _, r := range routes {
		h := normalHost(r.Hostname)
		if prev, ok := t.routes[h]; ok {
			if prev.AppID != r.AppID {
				p.opts.Logf("nibrunnerd: proxy: hostname %s is named by both %s and %s; %s keeps it", h, prev.AppID, r.AppID, prev.AppID)
			}
			continue
		}
		if r.Addr == "" {
			// Joined once here, not for every request.
			r.Addr = net.JoinHostPort(p.opts.BackendHost, strconv.Itoa(r.HostPort))
		}
		t.routes[h] = r
	}
	p.table.Store(t)
	// Forget the traffic of apps no hostname leads to any more, unless a
	// request to one is still open.
	apps := make(map[string]bool, len(t.routes))
	for _, r := range t.routes {
		apps[r.AppID] = true
	}
	p.meters.Keep(func(app string) bool { return apps[app] })
	p.slots.keep(func(app string) bool { return apps[app] })
	return nil
}

type backendKey struct{}

// verdict is where one request goes: to addr, or the answer the proxy
// gives itself.
type verdict struct {
	app   string
	m     *meter.Meter // the app's traffic; nil with no app
	addr  string       // "" with an answer
	reply answer
	later bool // the answer carries Retry-After
}

// decide routes a request for host (already normalHost'd) that arrived
// over TLS for sni (normalHost'd, "" without). It may wait on a wake;
// ctx ends the wait (not the wake) when the client leaves. The meter of
// the app, when there is one, is begun: the caller ends it.
//
// leave, when set, is called before a wait on a wake (a task of the
// event loop leaves it then).
func (p *Proxy) decide(ctx context.Context, host []byte, sni string, upgrade bool, leave func(), now time.Time) verdict {
	if len(host) == 0 {
		return verdict{reply: noHost}
	}
	if sni != "" && sni != string(host) {
		return verdict{reply: misdirected}
	}
	t := p.table.Load()
	rt, ok := t.routes[string(host)]
	if !ok {
		return verdict{reply: unknownHost}
	}
	v := verdict{app: rt.AppID, m: p.meters.Of(rt.AppID)}
	v.m.Begin(now)
	addr := rt.Addr
	switch rt.State {
	case route.Sleeping:
		if at, awake := t.awake.Load(rt.AppID); awake {
			if a := at.(string); a != "" {
				addr = a
			}
		} else {
			wk := p.start(rt.AppID)
			if leave != nil {
				leave()
			}
			if !p.await(ctx, wk, upgrade, &v) {
				return v
			}
			if wk.addr != "" {
				addr = wk.addr
			}
		}
	case route.Up:
		// A table applied while a wake this proxy started was still
		// running may already say up; a request that arrives then waits
		// for that wake too.
		if wk := p.wakes.running(rt.AppID); wk != nil {
			if leave != nil {
				leave()
			}
			if !p.await(ctx, wk, upgrade, &v) {
				return v
			}
		}
	default:
		v.reply = notRunning
		return v
	}
	v.addr = addr
	return v
}

// ServeHTTP routes one request that came through net/http: HTTP/2 (over
// TLS, or h2c with prior knowledge). HTTP/1.x takes the lean path of
// h1.go instead. Served this way, outside a Server, a stream has no
// timeouts of its own.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.serveStream(w, r, streamLimits{})
}

// serveStream routes one HTTP/2 stream under lim. It always answers or
// resets the stream: a handler that returned having written nothing
// would have net/http send an empty 200 in its name.
func (p *Proxy) serveStream(w http.ResponseWriter, r *http.Request, lim streamLimits) {
	lg := requestLog{start: p.opts.Now()}
	sw := &statusWriter{ResponseWriter: w}
	rc := http.NewResponseController(w)
	// An answer the client takes nothing of for lim.send resets the
	// stream.
	sw.send = newOpWatch(lim.send, func() {
		p.tripped(limitSendTimeout)
		_ = rc.SetWriteDeadline(time.Now().Add(-time.Second))
	})
	sw.bodyTimeout = lim.body
	var cb *countingBody
	defer func() {
		rec := recover()
		// Once stopped, the watches touch the stream no more: net/http
		// forgets it when this handler returns.
		sw.body.stop()
		sw.send.stop()
		lg.status = sw.status
		if cb != nil {
			lg.bytesIn = cb.n.Load()
		}
		lg.bytesOut = sw.n
		if lg.status == 0 {
			// Nothing was answered: the client left, or its connection
			// was stopped; the stream is reset, and logged as what it was.
			lg.status = statusClientLeft
			if lim.conn != nil && lim.conn.stopped.Load() {
				lg.status = statusNoAnswer
			}
			if rec == nil {
				rec = http.ErrAbortHandler
			}
		}
		p.logH2(r, lg)
		if rec != nil {
			panic(rec)
		}
	}()
	sni := ""
	if r.TLS != nil {
		sni = sniName(r.TLS.ServerName)
	}
	v := p.decide(r.Context(), []byte(normalHost(r.Host)), sni, r.Header.Get("Upgrade") != "", nil, p.opts.Now())
	lg.app = v.app
	if v.m != nil {
		defer func() { v.m.End(p.opts.Now()) }()
	}
	if v.addr == "" {
		if v.later {
			w.Header().Set("Retry-After", p.retryAt)
		}
		if v.reply.status != statusClientLeft {
			reply(sw, v.reply)
		}
		return
	}
	place, ok := p.slots.acquire(r.Context(), v.app, p.opts.DialTimeout)
	if !ok {
		if r.Context().Err() == nil {
			p.appBusy(sw, v.app)
		}
		return
	}
	defer place.release()
	if r.Body != nil && r.Body != http.NoBody {
		cb = &countingBody{ReadCloser: r.Body, m: v.m, now: p.opts.Now}
		// A body that does not go on is cut (its reader fails, so the
		// app's connection is closed) and answered 408.
		sw.body = newOpWatch(lim.body, func() {
			p.tripped(limitBodyTimeout)
			_ = cb.Close()
		})
		cb.watch = sw.body
		r.Body = cb
		// So is the body of a stream whose connection was stopped: the
		// transport gives up on the app only once its read of it ends.
		defer context.AfterFunc(r.Context(), func() { _ = cb.Close() })()
	}
	ctx := context.WithValue(r.Context(), backendKey{}, v.addr)
	p.rp.ServeHTTP(sw, r.WithContext(ctx))
	// What the answer left in net/http's buffer goes now, while the send
	// watch times it; the stream's end needs no room from the client.
	if sw.status != 0 {
		_ = sw.FlushError()
	}
}

// appBusy answers a request whose app had no connection free.
func (p *Proxy) appBusy(w http.ResponseWriter, app string) {
	p.noPlace(app)
	w.Header().Set("Retry-After", p.retryAt)
	reply(w, appBusy)
}

// noPlace counts and logs a request that found no place among its app's
// connections.
func (p *Proxy) noPlace(app string) {
	p.tripped(limitAppConnections)
	p.opts.Logf("nibrunnerd: proxy: app %s has %d requests open (MaxBackendConnsPerApp) and none ended within %v; answered 503", app, p.opts.MaxBackendConnsPerApp, p.opts.DialTimeout)
}

// logH2 fills in what r says about itself and logs the request.
func (p *Proxy) logH2(r *http.Request, l requestLog) {
	l.id = appendRequestID(nil)
	l.client = []byte(clientOf(r))
	l.method, l.host = []byte(r.Method), []byte(r.Host)
	l.target, l.proto = []byte(r.URL.RequestURI()), []byte(r.Proto)
	var line []byte
	p.logRequest(&l, &line, 0, p.opts.Now())
}

// clientOf is the address r came from, without its port, as the
// HTTP/1.x path logs it.
func clientOf(r *http.Request) string {
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		return ap.Addr().Unmap().String()
	}
	return r.RemoteAddr
}

// statusWriter remembers the status (0: none written) and counts the
// body bytes written; each write and flush is timed by send.
type statusWriter struct {
	http.ResponseWriter
	status      int
	n           int64
	body, send  *opWatch // nil: untimed
	bodyTimeout time.Duration
}

func (s *statusWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.send.begin()
	n, err := s.ResponseWriter.Write(b)
	s.send.end()
	s.n += int64(n)
	return n, err
}

// FlushError sends what is buffered (ReverseProxy flushes through it).
func (s *statusWriter) FlushError() error {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	s.send.begin()
	defer s.send.end()
	return http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// backendFailed answers 502 when the app cannot be reached or broke off.
func (p *Proxy) backendFailed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left; nobody reads an answer
	}
	if sw, ok := w.(*statusWriter); ok && sw.body.timedOut() {
		reply(w, bodyTimedOut(sw.bodyTimeout))
		return
	}
	if headTimedOut(err) {
		p.opts.Logf("nibrunnerd: proxy: %s %s: the app began no answer within %v (ResponseHeaderTimeout)", r.Host, r.URL.Path, p.opts.ResponseHeaderTimeout)
		reply(w, answerTimedOut(p.opts.ResponseHeaderTimeout))
		return
	}
	p.opts.Logf("nibrunnerd: proxy: %s %s: %v", r.Host, r.URL.Path, err)
	reply(w, unreachable)
}

// headTimedOut tells a wait for an answer's head that timed out from
// other failures (a dial that timed out is the app being unreachable).
func headTimedOut(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// normalHost is a Host header or SNI name as the table keys it: no port,
// no brackets, no trailing dot, lower case.
func normalHost(h string) string { return string(appendNormalHost(nil, []byte(h))) }

// appendNormalHost appends normalHost(h) to dst without allocating when
// dst has room.
func appendNormalHost(dst, h []byte) []byte {
	h = bytes.TrimSpace(h)
	if len(h) > 0 && h[0] == '[' {
		if i := bytes.IndexByte(h, ']'); i > 0 && (i == len(h)-1 || h[i+1] == ':') {
			h = h[1:i]
		}
	} else if i := bytes.IndexByte(h, ':'); i >= 0 && bytes.IndexByte(h[i+1:], ':') < 0 {
		h = h[:i]
	}
	h = bytes.TrimSuffix(h, []byte("."))
	for _, c := range h {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// sniName is the TLS server name a request is checked against: normalised,
// and none for an IP literal, which RFC 6066 §3 does not allow there but
// some clients (wrk, given a URL with an address) send anyway.
func sniName(s string) string {
	if s == "" {
		return ""
	}
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return ""
	}
	return normalHost(s)
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers, which it would
// otherwise allocate for every response.
type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.pool.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.pool.Put(&buf) }
