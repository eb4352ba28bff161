package proxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// holdingApp is an app that reads what it is sent and never answers: it
// tells each request the proxy opens a connection for, and each
// connection it closes.
type holdingApp struct {
	port           int
	opened, closed chan struct{}
	open           atomic.Int64
	mu             sync.Mutex
	conns          []net.Conn
}

// hangUp closes every connection the app has.
func (a *holdingApp) hangUp() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.conns {
		c.Close()
	}
}

func newHoldingApp(t *testing.T) *holdingApp {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &holdingApp{port: l.Addr().(*net.TCPAddr).Port, opened: make(chan struct{}, 256), closed: make(chan struct{}, 256)}
	var conns sync.WaitGroup
	t.Cleanup(func() { l.Close(); conns.Wait() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			a.open.Add(1)
			a.mu.Lock()
			a.conns = append(a.conns, c)
			a.mu.Unlock()
			conns.Add(1)
			go func() {
				defer conns.Done()
				// A connection counts as opened once a request's head came
				// on it: the request owns it then, so it is the request's
				// end that closes it.
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						break
					}
					if line == "\r\n" {
						a.opened <- struct{}{}
						break
					}
				}
				_, _ = io.Copy(io.Discard, r) // until the proxy closes it
				c.Close()
				a.open.Add(-1)
				a.closed <- struct{}{}
			}()
		}
	}()
	return a
}

// await waits for n signals on ch.
func await(t *testing.T, what string, ch chan struct{}, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// h2event is a frame (or the end of the connection) an h2peer saw.
type h2event struct {
	kind   string // "headers", "rst", "goaway", "eof"
	stream uint32
	status int
	code   http2.ErrCode
}

// h2peer is an HTTP/2 client driven frame by frame, so that a test can
// open streams and then send nothing of their bodies.
type h2peer struct {
	t      *testing.T
	c      net.Conn
	fr     *http2.Framer
	wmu    sync.Mutex
	enc    *hpack.Encoder
	encBuf bytes.Buffer
	next   uint32
	mu     sync.Mutex
	seen   []h2event
	change chan struct{}
	// done is set once the test is over: the connection is about to be
	// closed, and the read loop's acknowledgements may find it closed.
	done atomic.Bool
}

// dialH2 opens an HTTP/2 connection to addr: h2c with prior knowledge
// when pool is nil, else TLS negotiating h2 for shop.example.com.
// settings go in the client's first SETTINGS frame.
func dialH2(t *testing.T, addr string, pool *x509.CertPool, settings ...http2.Setting) *h2peer {
	t.Helper()
	var c net.Conn
	var err error
	if pool == nil {
		c, err = net.Dial("tcp", addr)
	} else {
		var tc *tls.Conn
		tc, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "shop.example.com", NextProtos: []string{"h2"}})
		if err == nil && tc.ConnectionState().NegotiatedProtocol != "h2" {
			t.Fatalf("negotiated %q, want h2", tc.ConnectionState().NegotiatedProtocol)
		}
		c = tc
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := &h2peer{t: t, c: c, fr: http2.NewFramer(c, c), next: 1, change: make(chan struct{}, 1)}
	p.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	p.enc = hpack.NewEncoder(&p.encBuf)
	t.Cleanup(func() { p.done.Store(true) }) // runs before the Close above
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	p.write(func() error { return p.fr.WriteSettings(settings...) })
	go p.readLoop()
	return p
}

func (p *h2peer) write(f func() error) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := f(); err != nil && !p.done.Load() {
		p.t.Errorf("write a frame: %v", err)
	}
}

func (p *h2peer) readLoop() {
	for {
		f, err := p.fr.ReadFrame()
		if err != nil {
			p.note(h2event{kind: "eof"})
			return
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			status, _ := strconv.Atoi(f.PseudoValue("status"))
			p.note(h2event{kind: "headers", stream: f.StreamID, status: status})
		case *http2.RSTStreamFrame:
			p.note(h2event{kind: "rst", stream: f.StreamID, code: f.ErrCode})
		case *http2.GoAwayFrame:
			p.note(h2event{kind: "goaway", code: f.ErrCode})
		case *http2.SettingsFrame:
			if !f.IsAck() {
				p.write(p.fr.WriteSettingsAck)
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				p.write(func() error { return p.fr.WritePing(true, f.Data) })
			}
		}
	}
}

func (p *h2peer) note(e h2event) {
	p.mu.Lock()
	p.seen = append(p.seen, e)
	p.mu.Unlock()
	select {
	case p.change <- struct{}{}:
	default:
	}
}

// await waits for an event that match accepts.
func (p *h2peer) await(what string, match func(h2event) bool) h2event {
	p.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		for _, e := range p.seen {
			if match(e) {
				p.mu.Unlock()
				return e
			}
		}
		seen := append([]h2event(nil), p.seen...)
		p.mu.Unlock()
		select {
		case <-p.change:
		case <-timeout:
			p.t.Fatalf("timed out waiting for %s; saw %+v", what, seen)
		}
	}
}

// awaitOn waits for an event of kind on stream.
func (p *h2peer) awaitOn(kind string, stream uint32) h2event {
	p.t.Helper()
	return p.await(kind+" on stream "+strconv.Itoa(int(stream)), func(e h2event) bool { return e.kind == kind && e.stream == stream })
}

// open sends a request's head on a new stream; with body, the stream
// stays open for a body that the test never sends.
func (p *h2peer) open(method, path string, body bool) uint32 {
	id := p.next
	p.next += 2
	p.write(func() error {
		p.encBuf.Reset()
		for _, f := range [][2]string{{":method", method}, {":scheme", "https"}, {":authority", "shop.example.com"}, {":path", path}} {
			_ = p.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return p.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: p.encBuf.Bytes(), EndHeaders: true, EndStream: !body})
	})
	return id
}

// h2Front is a proxy serving h2c on one address and h2 over TLS on
// another, both routing shop.example.com to port, with its access log.
type h2Front struct {
	rec      *limitRecorder
	log      *testenv.SyncBuffer
	h2c, tls string
	pool     *x509.CertPool
}

func newH2Front(t *testing.T, opts Options, cfg ListenConfig, port int) *h2Front {
	certFile, keyFile, pool := selfSigned(t, "shop.example.com")
	f := &h2Front{rec: newLimitRecorder(), log: &testenv.SyncBuffer{}}
	opts.Logf, opts.Recorder, opts.AccessLog = t.Logf, f.rec, f.log
	p := New(opts)
	plain := cfg
	plain.H2C = true
	f.h2c = serve(t, p, plain)
	cfg.CertFile, cfg.KeyFile = certFile, keyFile
	f.tls = serve(t, p, cfg)
	f.pool = pool
	apply(t, p, routeTo("shop.example.com", "shop", port, route.Up))
	return f
}

// bothWays runs test over h2c and over h2 with TLS.
func bothWays(t *testing.T, test func(t *testing.T, dial func(t *testing.T, f *h2Front, s ...http2.Setting) *h2peer)) {
	t.Run("h2c", func(t *testing.T) {
		test(t, func(t *testing.T, f *h2Front, s ...http2.Setting) *h2peer { return dialH2(t, f.h2c, nil, s...) })
	})
	t.Run("h2 over TLS", func(t *testing.T) {
		test(t, func(t *testing.T, f *h2Front, s ...http2.Setting) *h2peer { return dialH2(t, f.tls, f.pool, s...) })
	})
}

// statuses are the statuses the access log holds, in order.
func (f *h2Front) statuses(t *testing.T, n int) []int {
	t.Helper()
	waitFor(t, strconv.Itoa(n)+" access log lines", func() bool { return strings.Count(f.log.String(), "\n") >= n })
	var out []int
	for _, l := range strings.Split(strings.TrimSpace(f.log.String()), "\n") {
		var line struct{ Status int }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		out = append(out, line.Status)
	}
	return out
}

func TestH2StreamsWhoseBodiesNeverComeAreAnswered408AndResetAtTheBodyTimeoutAndTheirAppConnectionsClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	bothWays(t, func(t *testing.T, dial func(*testing.T, *h2Front, ...http2.Setting) *h2peer) {
		app := newHoldingApp(t)
		f := newH2Front(t, Options{}, ListenConfig{BodyTimeout: timeout}, app.port)
		c := dial(t, f)
		began := time.Now()
		streams := []uint32{c.open("POST", "/", true), c.open("POST", "/", true), c.open("PUT", "/", true)}
		await(t, "the app's three connections", app.opened, 3)
		for _, id := range streams {
			if h := c.awaitOn("headers", id); h.status != http.StatusRequestTimeout {
				t.Fatalf("stream %d answered %d, want 408", id, h.status)
			}
			c.awaitOn("rst", id)
		}
		if waited := time.Since(began); waited < timeout {
			t.Fatalf("answered after %v, before the %v timeout", waited, timeout)
		}
		await(t, "the app's three connections to close", app.closed, 3)
		f.rec.await(t, limitBodyTimeout)
		if got := f.statuses(t, 3); got[0] != 408 || got[1] != 408 || got[2] != 408 {
			t.Fatalf("logged %v, want three 408s", got)
		}
	})
}

func TestTheStreamThatGoesPastItsClientsBudgetStopsItsConnection(t *testing.T) {
	bothWays(t, func(t *testing.T, dial func(*testing.T, *h2Front, ...http2.Setting) *h2peer) {
		app := newHoldingApp(t)
		// Five places: a's connection and two streams, b's connection and
		// one stream. Bodies never come, and the body timeout is far off.
		f := newH2Front(t, Options{}, ListenConfig{MaxConnectionsPerClient: 5, BodyTimeout: time.Minute}, app.port)
		a := dial(t, f)
		a.open("POST", "/", true)
		a.open("POST", "/", true)
		await(t, "a's two app connections", app.opened, 2)
		b := dial(t, f)
		held := b.open("POST", "/", true)
		await(t, "b's app connection", app.opened, 1)
		past := b.open("POST", "/", true)
		if h := b.awaitOn("headers", past); h.status != http.StatusServiceUnavailable {
			t.Fatalf("the stream past the budget was answered %d, want 503", h.status)
		}
		f.rec.await(t, limitClientConnections)
		b.await("GOAWAY", func(e h2event) bool { return e.kind == "goaway" })
		b.awaitOn("rst", held)
		await(t, "b's app connection to close", app.closed, 1)
		b.await("b's connection to close", func(e h2event) bool { return e.kind == "eof" })
		if got := f.statuses(t, 2); got[0] != 503 || got[1] != statusNoAnswer {
			t.Fatalf("logged %v, want 503 for the stream past the budget, then %d for the one reset", got, statusNoAnswer)
		}
		// a is not b: its streams still hold their app connections.
		if n := app.open.Load(); n != 2 {
			t.Fatalf("the app has %d connections open, want a's 2", n)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if len(a.seen) != 0 {
			t.Fatalf("a saw %+v, want nothing", a.seen)
		}
	})
}

func TestAnH2StreamWhoseClientTakesNothingIsResetAfterTheSendTimeout(t *testing.T) {
	port := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := strings.Repeat("x", 64<<10)
		for range 64 { // 4 MiB: more than any window the client opens
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	bothWays(t, func(t *testing.T, dial func(*testing.T, *h2Front, ...http2.Setting) *h2peer) {
		f := newH2Front(t, Options{}, ListenConfig{SendTimeout: 300 * time.Millisecond}, port)
		// The stream's window is shut and never opened: the connection
		// stays readable, the stream takes nothing.
		c := dial(t, f, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
		id := c.open("GET", "/", false)
		if h := c.awaitOn("headers", id); h.status != 200 {
			t.Fatalf("answered %d, want the app's 200", h.status)
		}
		if rst := c.awaitOn("rst", id); rst.code != http2.ErrCodeInternal {
			t.Fatalf("reset with %v, want INTERNAL_ERROR", rst.code)
		}
		f.rec.await(t, limitSendTimeout)
		if got := f.statuses(t, 1); got[0] != 200 {
			t.Fatalf("logged %v, want the app's 200 as it was sent", got)
		}
	})
}

func TestAnH2StreamItsClientCancelledIsLogged499NotAnEmpty200(t *testing.T) {
	bothWays(t, func(t *testing.T, dial func(*testing.T, *h2Front, ...http2.Setting) *h2peer) {
		app := newHoldingApp(t)
		f := newH2Front(t, Options{}, ListenConfig{}, app.port)
		c := dial(t, f)
		id := c.open("GET", "/", false)
		await(t, "the app's connection", app.opened, 1)
		c.write(func() error { return c.fr.WriteRSTStream(id, http2.ErrCodeCancel) })
		await(t, "the app's connection to close", app.closed, 1)
		if got := f.statuses(t, 1); got[0] != statusClientLeft {
			t.Fatalf("logged %v, want %d", got, statusClientLeft)
		}
	})
}

func TestH2CIsOffUnlessTheListenerAllowsIt(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, http2.ClientPreface)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusHTTPVersionNotSupported || string(b) != noH2C.text+"\n" {
		t.Fatalf("an h2c preface got %d %q, want 505 %q", resp.StatusCode, b, noH2C.text)
	}
	// HTTP/1.1 on the same listener is unchanged.
	must(t, get(t, &http.Client{}, "http://"+addr, "shop.example.com"), 200, "shop answers shop.example.com\n")
}

func TestAnAppsConnectionsAreBoundedOverBothPathsTogether(t *testing.T) {
	app := newHoldingApp(t)
	f := newH2Front(t, Options{MaxBackendConnsPerApp: 2, DialTimeout: 200 * time.Millisecond}, ListenConfig{}, app.port)
	t.Cleanup(app.hangUp) // before the proxy's: it waits on what it forwards
	// One request over HTTP/1.1 and one HTTP/2 stream hold the app's two
	// places (it never answers).
	h1, err := net.Dial("tcp", f.h2c)
	if err != nil {
		t.Fatal(err)
	}
	defer h1.Close()
	io.WriteString(h1, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
	c := dialH2(t, f.tls, f.pool)
	c.open("GET", "/", false)
	await(t, "the app's two connections", app.opened, 2)
	// A third, over either path, finds no place within DialTimeout.
	id := c.open("GET", "/", false)
	if h := c.awaitOn("headers", id); h.status != http.StatusServiceUnavailable {
		t.Fatalf("a third request was answered %d, want 503", h.status)
	}
	f.rec.await(t, limitAppConnections)
	h1b, err := net.Dial("tcp", f.h2c)
	if err != nil {
		t.Fatal(err)
	}
	defer h1b.Close()
	io.WriteString(h1b, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(h1b), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || string(b) != appBusy.text+"\n" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over HTTP/1.1: %d %q %v", resp.StatusCode, b, resp.Header)
	}
	if n := app.open.Load(); n != 2 {
		t.Fatalf("the app has %d connections open, want 2", n)
	}
}

func TestAStreamPastTheHostsCapIs503AloneAndItsConnectionGoesOn(t *testing.T) {
	app := newHoldingApp(t)
	// Three places on each listener: the connection and two streams.
	f := newH2Front(t, Options{}, ListenConfig{MaxConnections: 3, BodyTimeout: time.Minute}, app.port)
	t.Cleanup(app.hangUp)
	c := dialH2(t, f.h2c, nil)
	held := []uint32{c.open("POST", "/", true), c.open("POST", "/", true)}
	await(t, "the app's two connections", app.opened, 2)
	past := c.open("GET", "/", false)
	if h := c.awaitOn("headers", past); h.status != http.StatusServiceUnavailable {
		t.Fatalf("the stream past the host's cap was answered %d, want 503", h.status)
	}
	f.rec.await(t, limitConnections)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.seen {
		if e.kind == "goaway" || e.kind == "eof" || e.stream == held[0] || e.stream == held[1] {
			t.Fatalf("the connection was stopped: saw %+v", c.seen)
		}
	}
	if n := app.open.Load(); n != 2 {
		t.Fatalf("the app has %d connections open, want the 2 held", n)
	}
}
