package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"alpnib.dev/nibrunner/proxy/meter"
)

// HTTP/1.x is served by a lean forwarder of its own rather than
// net/http's server and httputil.ReverseProxy: each client connection
// (a task of an event loop, loop.go, or a goroutine of its own once it
// left one or with ListenConfig.GoroutinePerConnection) reads a request
// head into a reused buffer, writes it to a
// kept-alive connection to the app with the hop-by-hop fields dropped and
// the X-Forwarded ones added, and copies the response back, all without
// per-request maps or goroutines (docs/bench.md has the measurements that
// led here). Bodies pass as they came: fixed length, or chunked framing
// copied verbatim, so the proxy never buffers one whole.

// h1conn is one client connection on the HTTP/1.x path.
type h1conn struct {
	s      *Server
	p      *Proxy
	st     *connState
	c      *timedConn
	r      *bufio.Reader
	w      *bufio.Writer
	tls    bool
	sni    string
	client []byte // the client's address, without port
	req    head
	resp   head
	key    []byte // scratch: the normalised host
	id     []byte // scratch: the request id
	xff    []byte // scratch: X-Forwarded-For
	line   []byte // scratch: the access log line
	// held is the app connection of this connection's last request when
	// its pool was full: kept for this client's next request rather than
	// closed (a full pool is a burst, and the next request would dial).
	held  *bconn
	shard uint32 // the access log buffer this connection's lines go to
	// lc is the client connection when a loop serves it (loop.go), and
	// leaveFn takes this connection's task out of it.
	lc      *loopConn
	leaveFn func()
}

// h1conns counts the HTTP/1.x connections served, spreading their access
// log lines over the AccessLogWriter's buffers.
var h1conns atomic.Uint32

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// serveH1 serves HTTP/1.x requests on c until the client closes it, a
// request or response says close, or the server shuts down. r is c's
// reader (it may hold bytes already peeked).
func (s *Server) serveH1(c *timedConn, r *bufio.Reader, st *connState, isTLS bool, sni string) {
	h := &h1conn{s: s, p: s.p, c: c, r: r, st: st, tls: isTLS, sni: sni, shard: h1conns.Add(1)}
	h.w = writerPool.Get().(*bufio.Writer)
	h.w.Reset(c)
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		h.client = a.AddrPort().Addr().Unmap().AppendTo(nil)
	}
	if h.lc = lcOf(c.Conn); h.lc != nil {
		c.lc = h.lc
		h.leaveFn = func() { h.leave(nil) }
	}
	defer func() {
		h.w.Reset(nil)
		writerPool.Put(h.w)
		if h.held != nil {
			h.unhold().Close()
		}
	}()
	for {
		st.idle.Store(true)
		if s.closing.Load() {
			return
		}
		c.readIdle = 0
		// The idle deadline, unless the one armed is it and less than an
		// eighth of it old (a connection waits 7/8 of IdleTimeout at least):
		// a kept-alive request then arms no timer for its wait or its head
		// (each a change to the runtime's timers, docs/bench.md).
		if t, rearm := due(c.lc.clock(), c.readAt, s.cfg.IdleTimeout); rearm {
			_ = c.SetReadDeadline(t)
		}
		if r.Buffered() == 0 && !h.inLoop() {
			// The next request is likely on its way: yield once, so it
			// arrives while other connections are served and the read
			// finds it instead of parking on the poller (docs/bench.md).
			runtime.Gosched()
		}
		if _, err := r.Peek(1); err != nil {
			return
		}
		st.idle.Store(false)
		// ReadHeaderTimeout from the head's first read past what woke the
		// connection: a head that came whole needs none.
		c.headTimeout = s.cfg.ReadHeaderTimeout
		err := h.req.read(r)
		c.headTimeout = 0
		if err == nil {
			err = h.req.parseRequest()
		}
		if err != nil {
			var b *badMessage
			switch {
			case errors.As(err, &b):
				h.refuse(answer{b.status, b.text})
			case isTimeout(err):
				// A head trickled past ReadHeaderTimeout: closed unanswered,
				// as nginx does at client_header_timeout.
				h.p.tripped(limitHeaderTimeout)
			case errors.Is(err, errHeadTooLarge):
				h.p.tripped(limitHeaderSize)
				h.refuse(answer{431, "The request's header is too large: more than 64 KiB."})
			case errors.Is(err, errTooManyFields):
				h.p.tripped(limitHeaderSize)
				h.refuse(answer{431, "The request's header has too many fields: more than 256."})
			case errors.Is(err, errMalformed):
				h.refuse(answer{400, "This request is not valid HTTP/1.1."})
			}
			return // a timeout or a closed connection needs no answer
		}
		// What is read from the client now is its body: each read waits
		// at most BodyTimeout.
		c.readIdle = s.cfg.BodyTimeout
		if !h.serveOne() {
			return
		}
	}
}

// refuse answers a request the proxy could not read, and the connection
// is closed after it.
func (h *h1conn) refuse(a answer) {
	_ = h.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	writeAnswer(h.w, a, "", true)
	_ = h.w.Flush()
}

// writeAnswer writes one of the proxy's own answers.
func writeAnswer(w *bufio.Writer, a answer, retryAfter string, closing bool) {
	w.WriteString("HTTP/1.1 ")
	w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(a.status), 10))
	w.WriteString(" ")
	w.WriteString(http.StatusText(a.status))
	w.WriteString("\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\nContent-Length: ")
	w.Write(strconv.AppendInt(w.AvailableBuffer(), int64(len(a.text)+1), 10))
	if retryAfter != "" {
		w.WriteString("\r\nRetry-After: ")
		w.WriteString(retryAfter)
	}
	if closing {
		w.WriteString("\r\nConnection: close")
	}
	w.WriteString("\r\n\r\n")
	w.WriteString(a.text)
	w.WriteString("\n")
}

// serveOne answers the request in h.req; false closes the connection.
func (h *h1conn) serveOne() bool {
	p := h.p
	req := &h.req
	start := h.now()
	h.id = appendRequestID(h.id[:0])
	hostField := req.bytes(req.host)
	target := req.bytes(req.first[1])
	if req.hosts > 1 || (req.hosts == 0 && req.minor >= 1) {
		// RFC 9112 §3.2: one Host field in every HTTP/1.1 request.
		h.refuse(answer{400, "This request must name exactly one Host."})
		return false
	}
	if abs, host, path := absoluteForm(target); abs {
		// A client that talks to us as to a forward proxy names the host
		// in the target; that name wins over the Host field (RFC 9112
		// §3.2.2), the app is sent it as its Host, and the origin form.
		hostField, target = host, path
	}
	h.key = appendNormalHost(h.key[:0], hostField)
	hasBody := req.contentLength > 0 || req.chunked
	v := p.decide(h.s.ctx, h.key, h.sni, req.upgrade, h.leaveFn, start)
	lg := requestLog{app: v.app, status: v.reply.status, start: start}
	if v.m != nil {
		defer func() { v.m.End(h.now()) }()
	}
	keep := !req.close && !hasBody
	if v.addr == "" {
		// The proxy's own answer. A body the client sends with it is not
		// read: the connection closes after the answer instead.
		retry := ""
		if v.later {
			retry = p.retryAt
		}
		writeAnswer(h.w, v.reply, retry, !keep)
		err := h.w.Flush()
		lg.bytesOut = int64(len(v.reply.text) + 1)
		h.log(&lg, target)
		return keep && err == nil && !h.s.closing.Load()
	}
	place, ok := p.slots.try(v.app)
	if !ok {
		h.leave(nil) // a wait for a place is no wait on a socket
		place, ok = p.slots.acquire(h.s.ctx, v.app, p.opts.DialTimeout)
	}
	if !ok {
		// No place among the app's connections: answered as the proxy's
		// own answers are, a body left unread closing the connection.
		p.noPlace(v.app)
		writeAnswer(h.w, appBusy, p.retryAt, !keep)
		err := h.w.Flush()
		lg.status, lg.bytesOut = appBusy.status, int64(len(appBusy.text)+1)
		h.log(&lg, target)
		return keep && err == nil && !h.s.closing.Load()
	}
	keep, lg = h.forward(v, target, hostField, lg)
	place.release()
	h.log(&lg, target)
	return keep && !h.s.closing.Load()
}

// forward sends the request to the app at v.addr and its answer back.
func (h *h1conn) forward(v verdict, target, host []byte, lg requestLog) (bool, requestLog) {
	p, req, resp := h.p, &h.req, &h.resp
	hasBody := req.contentLength > 0 || req.chunked
	var bc *bconn
	var err error
	for attempt := 0; ; attempt++ {
		bc = nil
		if h.held != nil {
			bc = p.pools.reuse(h.unhold(), v.addr, h.now())
		}
		if bc == nil {
			bc, err = p.pools.get(context.Background(), v.addr, h.now(), h.loop())
		}
		if err != nil {
			break
		}
		h.writeRequestHead(bc.w, target, host)
		if !hasBody || req.expect {
			err = bc.w.Flush()
		}
		if err == nil && hasBody && !req.expect {
			if lg.bytesIn, err = h.sendBody(bc, v.m); err != nil {
				bc.Close()
				return false, h.bodyFailed(lg, err)
			}
		}
		if err == nil {
			if bc.r.Buffered() == 0 && !h.inLoop() {
				runtime.Gosched() // the app's answer: as for the next request
			}
			err = h.readResponseHead(bc)
		}
		if err == nil || !bc.reused || hasBody || attempt > 0 || headTimedOut(err) {
			break
		}
		// A kept-alive connection the app had closed: once more on a new
		// one, as browsers and net/http do for a request with no body.
		bc.Close()
	}
	if err != nil {
		if bc != nil {
			bc.Close()
		}
		if headTimedOut(err) {
			return false, h.timedOut(v, lg)
		}
		return false, h.failed(lg, err, true)
	}
	// Interim answers: 100 Continue lets an expecting client send its
	// body; others (102, 103) are passed on as they come.
	for resp.status >= 100 && resp.status < 200 && resp.status != 101 {
		h.writeResponseHead(false)
		if err = h.w.Flush(); err != nil {
			bc.Close()
			return false, lg
		}
		if resp.status == 100 && req.expect && hasBody {
			req.expect = false
			if lg.bytesIn, err = h.sendBody(bc, v.m); err != nil {
				bc.Close()
				return false, h.bodyFailed(lg, err)
			}
		}
		if err = h.readResponseHead(bc); err != nil {
			bc.Close()
			if headTimedOut(err) {
				return false, h.timedOut(v, lg)
			}
			return false, h.failed(lg, err, true)
		}
	}
	lg.status = resp.status
	if resp.status == 101 {
		if !req.upgrade {
			bc.Close()
			return false, h.failed(lg, errors.New("the app switched protocols unasked"), true)
		}
		// The stream's two directions are two goroutines: out of the loop.
		h.leave(bc)
		_ = bc.SetReadDeadline(time.Time{}) // the stream is not timed
		h.c.readIdle = 0
		_ = h.c.SetReadDeadline(time.Time{})
		h.writeResponseHead(false)
		lg.bytesIn, lg.bytesOut = h.splice(bc, v.m)
		return false, lg
	}
	// The app may answer before it read an expected body; then the body
	// never crosses and neither connection can be reused.
	bodyUnsent := req.expect && hasBody
	noBody := string(req.bytes(req.first[0])) == "HEAD" || resp.status == 204 || resp.status == 304
	untilEOF := !noBody && !resp.chunked && resp.contentLength < 0
	closing := req.close || untilEOF || bodyUnsent || h.s.closing.Load()
	if !noBody && (resp.contentLength < 0 || int64(bc.r.Buffered()) < resp.contentLength) {
		// The body is not all here yet, and only the head is timed: a
		// stream may take as long as it takes. (A connection whose body
		// came whole with its head keeps its passed deadline; the next
		// request on it sets its own before reading.)
		_ = bc.SetReadDeadline(time.Time{})
	}
	h.writeResponseHead(closing)
	out := flow{}
	h.st.app.Store(bc) // shutdown's closeAll closes it
	switch {
	case noBody:
		err = nil
	case resp.chunked:
		err = pumpChunked(h.w, bc.r, &out)
	case resp.contentLength >= 0:
		err = pump(h.w, bc.r, resp.contentLength, &out)
	default:
		err = pump(h.w, bc.r, -1, &out)
	}
	h.st.app.Store(nil)
	lg.bytesOut = out.n
	if err == nil {
		err = h.w.Flush()
	}
	// A connection with bytes past the answer's end would give them to
	// the next client as its answer: it is closed, never pooled.
	reusable := err == nil && !resp.close && !untilEOF && !bodyUnsent && req.minor >= 1 && bc.r.Buffered() == 0
	if reusable {
		if !p.pools.put(bc, h.now()) {
			// The pool is full: the connection stays with this client
			// connection for its next request, where nginx's keepalive
			// closes it, so that the burst's end and the next burst do
			// not close and dial connections by the thousand (docs/bench.md).
			h.hold(bc)
		}
	} else {
		bc.Close()
	}
	return err == nil && !closing, lg
}

// inLoop reports whether a loop serves this connection now.
func (h *h1conn) inLoop() bool { return h.lc != nil && h.lc.task != nil && !h.lc.task.left }

// now is the clock of this connection's requests: on the wall clock,
// its connection's (loopConn.clock: the loop's, read once a poll, while
// a loop serves it); an injected clock otherwise.
func (h *h1conn) now() time.Time {
	if h.p.wallClock {
		return h.lc.clock()
	}
	return h.p.opts.Now()
}

// loop is the loop serving this connection now, nil when none does.
func (h *h1conn) loop() *loop {
	if h.inLoop() {
		return h.lc.l
	}
	return nil
}

// leave takes this connection out of its loop, with bc (the app
// connection in use, if any), before anything that may wait on more
// than its sockets. An app connection held for the next request is
// closed: the next comes from the runtime-polled pools.
func (h *h1conn) leave(bc *bconn) {
	if !h.inLoop() {
		return
	}
	if h.held != nil {
		h.unhold().Close()
	}
	var blc *loopConn
	if bc != nil {
		blc, bc.fd = bc.lc, -1
	}
	h.lc.task.leave(h.lc, blc)
}

// hold keeps bc, which its full pool did not take, for this client
// connection's next request, unless the app's connections held so already
// number MaxBackendConnsPerApp: then bc is closed. So an app has at most
// that many in use, as many held, and its pool's idle ones.
func (h *h1conn) hold(bc *bconn) {
	if bc.backend.held.Add(1) > int64(h.p.opts.MaxBackendConnsPerApp) {
		bc.backend.held.Add(-1)
		bc.Close()
		return
	}
	h.held = bc
}

// unhold takes back the connection hold kept.
func (h *h1conn) unhold() *bconn {
	bc := h.held
	h.held = nil
	bc.backend.held.Add(-1)
	return bc
}

// readResponseHead reads the app's answer's head (or an interim one),
// waiting at most ResponseHeaderTimeout for it.
func (h *h1conn) readResponseHead(bc *bconn) error {
	_ = bc.SetReadDeadline(h.lc.clock().Add(h.p.opts.ResponseHeaderTimeout))
	err := h.resp.read(bc.r)
	if err == nil {
		err = h.resp.parseResponse()
	}
	return err
}

// timedOut answers 504 for an app that began no answer in time.
func (h *h1conn) timedOut(v verdict, lg requestLog) requestLog {
	d := h.p.opts.ResponseHeaderTimeout
	h.p.opts.Logf("nibrunnerd: proxy: app %s (%s %s): began no answer within %v (ResponseHeaderTimeout); answered 504", v.app, h.req.bytes(h.req.host), h.req.bytes(h.req.first[1]), d)
	a := answerTimedOut(d)
	lg.status = a.status
	writeAnswer(h.w, a, "", true)
	_ = h.w.Flush()
	lg.bytesOut = int64(len(a.text) + 1)
	return lg
}

// failed answers 502 for an app that could not be reached or broke off,
// when nothing of its answer was sent yet.
func (h *h1conn) failed(lg requestLog, err error, answerIt bool) requestLog {
	h.p.opts.Logf("nibrunnerd: proxy: %s %s: %v", h.req.bytes(h.req.host), h.req.bytes(h.req.first[1]), err)
	lg.status = unreachable.status
	if answerIt {
		writeAnswer(h.w, unreachable, "", true)
		_ = h.w.Flush()
		lg.bytesOut = int64(len(unreachable.text) + 1)
	}
	return lg
}

// bodyFailed answers a request whose body did not cross: the client's
// malformed chunk is its 400, a body that stopped coming its 408, a
// client that left gets nothing, and an app that stopped reading is the
// app's 502.
func (h *h1conn) bodyFailed(lg requestLog, err error) requestLog {
	var b *badMessage
	var re *readError
	switch {
	case errors.As(err, &b):
		lg.status = b.status
		h.p.opts.Logf("nibrunnerd: proxy: %s %s: %v", h.req.bytes(h.req.host), h.req.bytes(h.req.first[1]), err)
		h.refuse(answer{b.status, b.text})
	case errors.As(err, &re) && isTimeout(err):
		a := bodyTimedOut(h.s.cfg.BodyTimeout)
		lg.status = a.status
		h.refuse(a)
	case errors.As(err, &re):
		lg.status = statusClientLeft
	default:
		return h.failed(lg, err, true)
	}
	lg.bytesOut = 0
	return lg
}

// sendBody copies the request body to the app and flushes it.
func (h *h1conn) sendBody(bc *bconn, m *meter.Meter) (int64, error) {
	in := flow{m: m, now: h.p.opts.Now}
	var err error
	if h.req.chunked {
		err = pumpChunked(bc.w, h.r, &in)
	} else {
		err = pump(bc.w, h.r, h.req.contentLength, &in)
	}
	if err == nil {
		err = bc.w.Flush()
	}
	return in.n, err
}

// writeRequestHead writes the request line and fields the app gets:
// the client's, less hop-by-hop ones, with Host kept, X-Forwarded-For
// appended to, X-Forwarded-Host and -Proto set, and an X-Request-Id.
func (h *h1conn) writeRequestHead(w *bufio.Writer, target, host []byte) {
	req := &h.req
	w.Write(req.bytes(req.first[0]))
	w.WriteByte(' ')
	w.Write(target)
	w.WriteByte(' ')
	w.Write(req.bytes(req.first[2]))
	w.WriteString("\r\n")
	// The Host the request was routed by, and no other: the client's
	// field, or the authority of an absolute-form target in its place.
	if len(host) > 0 {
		w.WriteString("Host: ")
		w.Write(host)
		w.WriteString("\r\n")
	}
	h.xff = h.xff[:0]
	sawID := false
	upgrade := req.copyFields(w, func(name, value []byte) bool {
		switch {
		case equalFold(name, hdrXForwardedFor):
			if len(h.xff) > 0 {
				h.xff = append(h.xff, ", "...)
			}
			h.xff = append(h.xff, value...)
			return false
		case equalFold(name, hdrXForwardedHost), equalFold(name, hdrXForwardedProto), equalFold(name, hdrHost):
			return false
		case equalFold(name, hdrXRequestID):
			sawID = true
		}
		return true
	})
	if req.upgrade && upgrade != nil {
		w.WriteString("Connection: Upgrade\r\nUpgrade: ")
		w.Write(upgrade)
		w.WriteString("\r\n")
	}
	w.WriteString("X-Forwarded-For: ")
	if len(h.xff) > 0 {
		w.Write(h.xff)
		w.WriteString(", ")
	}
	w.Write(h.client)
	w.WriteString("\r\nX-Forwarded-Host: ")
	w.Write(host)
	if h.tls {
		w.WriteString("\r\nX-Forwarded-Proto: https\r\n")
	} else {
		w.WriteString("\r\nX-Forwarded-Proto: http\r\n")
	}
	if !sawID {
		w.WriteString("X-Request-Id: ")
		w.Write(h.id)
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
}

// writeResponseHead writes the app's status line and fields less the
// hop-by-hop ones, saying Connection: close when the proxy will close.
func (h *h1conn) writeResponseHead(closing bool) {
	resp, w := &h.resp, h.w
	w.Write(resp.buf[:bytes.IndexByte(resp.buf, '\n')])
	w.WriteString("\r\n")
	upgrade := resp.copyFields(w, nil)
	switch {
	case resp.status == 101:
		w.WriteString("Connection: Upgrade\r\nUpgrade: ")
		w.Write(upgrade)
		w.WriteString("\r\n")
	case closing:
		w.WriteString("Connection: close\r\n")
	case h.req.minor == 0:
		w.WriteString("Connection: keep-alive\r\n")
	}
	w.WriteString("\r\n")
}

// splice carries an upgraded connection both ways until either side
// closes; bytes from the client count as the app's traffic.
func (h *h1conn) splice(bc *bconn, m *meter.Meter) (in, out int64) {
	if err := h.w.Flush(); err != nil {
		bc.Close()
		return 0, 0
	}
	done := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(bc.Conn, &touchReader{r: h.r, m: m, now: h.p.opts.Now})
		// The client is done sending: tell the app, and give it a moment
		// to finish its side before the stream is cut.
		if cw, ok := bc.Conn.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		_ = bc.Conn.SetReadDeadline(time.Now().Add(upgradeLinger))
		done <- n
	}()
	out, _ = io.Copy(h.c, bc.r)
	bc.Close()
	_ = h.c.SetReadDeadline(time.Now()) // ends the other direction
	return <-done, out
}

// upgradeLinger is how long an upgraded stream's app side may go on
// sending once the client has closed its side.
const upgradeLinger = 5 * time.Second

// touchReader marks its app busy whenever bytes arrive.
type touchReader struct {
	r   io.Reader
	m   *meter.Meter
	now func() time.Time
}

func (t *touchReader) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if n > 0 && t.m != nil {
		t.m.Touch(t.now())
	}
	return n, err
}

// log writes the access log line of the request just answered.
func (h *h1conn) log(lg *requestLog, target []byte) {
	lg.id = h.id
	lg.method = h.req.bytes(h.req.first[0])
	lg.host = h.req.bytes(h.req.host)
	lg.target = target
	lg.proto = h.req.bytes(h.req.first[2])
	lg.client = h.client
	h.p.logRequest(lg, &h.line, h.shard, h.now())
}

// absoluteForm splits an absolute-form target (http://host/path) into
// its host and origin-form path.
func absoluteForm(t []byte) (ok bool, host, path []byte) {
	var rest []byte
	switch {
	case len(t) > 7 && equalFold(t[:7], []byte("http://")):
		rest = t[7:]
	case len(t) > 8 && equalFold(t[:8], []byte("https://")):
		rest = t[8:]
	default:
		return false, nil, nil
	}
	i := bytes.IndexAny(rest, "/?")
	if i < 0 {
		return true, rest, []byte("/")
	}
	if rest[i] == '?' {
		return true, rest[:i], append([]byte("/"), rest[i:]...)
	}
	return true, rest[:i], rest[i:]
}

// copyFields writes h's fields to w, less the hop-by-hop ones (RFC 9110
// §7.6.1: Connection, those it lists, Keep-Alive, Proxy-Connection, TE
// other than "trailers", Upgrade) and those keep refuses, and returns
// the Upgrade field's value for the caller to restate.
func (h *head) copyFields(w *bufio.Writer, keep func(name, value []byte) bool) (upgrade []byte) {
	for i, f := range h.fields {
		name, value := h.bytes(f.name), h.bytes(f.value)
		switch {
		case equalFold(name, hdrUpgrade):
			upgrade = value
			continue
		case equalFold(name, hdrTE):
			if !equalFold(value, tokTrailers) {
				continue
			}
		case hopByHop(name), h.listedIn(name):
			continue
		case i != h.lengthAt && equalFold(name, hdrContentLength):
			// One Content-Length goes on, and none beside chunked framing
			// (RFC 9112 §6.3): a second one is how messages are smuggled.
			continue
		}
		if keep != nil && !keep(name, value) {
			continue
		}
		w.Write(name)
		w.WriteString(": ")
		w.Write(value)
		w.WriteString("\r\n")
	}
	return upgrade
}
