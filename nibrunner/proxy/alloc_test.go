package proxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// rawAppAnswer is what the raw app answers every request with; the proxy
// passes it on byte for byte (it has no hop-by-hop field).
const rawAppAnswer = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n"

// rawApp is an app on loopback that reads request heads (no bodies) and
// answers each with rawAppAnswer, allocating nothing per request, so a
// count of allocations around it is the proxy's. It returns its port.
func rawApp(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 16<<10)
				answer := []byte(rawAppAnswer)
				n := 0
				for {
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if end < 0 {
							break
						}
						if _, err := c.Write(answer); err != nil {
							return
						}
						n = copy(buf, buf[end+4:n])
					}
					if n == len(buf) {
						return // a head larger than the buffer: not this app's business
					}
				}
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// rawClient is one kept-alive client connection that sends the same GET
// and reads the answer it expects, allocating nothing per request.
type rawClient struct {
	c      net.Conn
	req    []byte
	answer []byte
}

func dialRaw(t testing.TB, addr, host string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{
		c:      c,
		req:    []byte("GET /hello?x=1 HTTP/1.1\r\nHost: " + host + "\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"),
		answer: make([]byte, len(rawAppAnswer)),
	}
}

// roundTrip sends one request and reads its whole answer.
func (r *rawClient) roundTrip() error {
	if _, err := r.c.Write(r.req); err != nil {
		return err
	}
	if _, err := io.ReadFull(r.c, r.answer); err != nil {
		return err
	}
	if string(r.answer) != rawAppAnswer {
		return errUnexpectedAnswer
	}
	return nil
}

type unexpectedAnswer struct{}

func (unexpectedAnswer) Error() string { return "the proxy's answer is not the app's" }

var errUnexpectedAnswer error = unexpectedAnswer{}

// proxiedKeepAlive is a proxy as nibrunnerd runs it (an access log
// through an AccessLogWriter, a Recorder) in front of a raw app, with
// one raw kept-alive client connected to it.
func proxiedKeepAlive(t testing.TB, routes int) *rawClient {
	t.Helper()
	app := rawApp(t)
	logw := NewAccessLogWriter(io.Discard, 100*time.Millisecond)
	t.Cleanup(func() { logw.Close() })
	p := New(Options{Logf: t.Logf, AccessLog: logw, Recorder: countingRecorder{}})
	addr := serve(t, p, ListenConfig{})
	rs := []route.Route{routeTo("shop.example.com", "shop", app, route.Up)}
	for i := 1; i < routes; i++ {
		rs = append(rs, routeTo("app"+strings.Repeat("x", i%7)+itoa(i)+".example.com", "app"+itoa(i), app, route.Up))
	}
	if err := p.Apply(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, addr, "shop.example.com")
	// The first requests dial the app and grow the buffers: not steady state.
	for range 10 {
		if err := c.roundTrip(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func itoa(i int) string {
	return string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676%26))
}

// countingRecorder is a Recorder that allocates nothing.
type countingRecorder struct{}

func (countingRecorder) ProxyRequest(string, int, int64, int64)  {}
func (countingRecorder) WakeWaited(string, time.Duration, error) {}
func (countingRecorder) ProxyLimit(string)                       {}

// BenchmarkProxiedKeepAliveRequest is one small GET after another on one
// kept-alive client connection, through the proxy to a kept-alive app
// connection, access log on: allocs/op is what the proxy allocates per
// request in steady state (client and app allocate nothing).
func BenchmarkProxiedKeepAliveRequest(b *testing.B) {
	c := proxiedKeepAlive(b, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := c.roundTrip(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestAProxiedKeepAliveRequestAllocatesNothing: in steady state a request
// through the HTTP/1.x path costs the garbage collector nothing, so the
// proxy's tail is not a collector's pause shared by every connection.
func TestAProxiedKeepAliveRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own account")
	}
	c := proxiedKeepAlive(t, 200)
	var err error
	allocs := testing.AllocsPerRun(2000, func() {
		if e := c.roundTrip(); e != nil && err == nil {
			err = e
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs >= 1 {
		t.Errorf("a proxied keep-alive request allocated %.0f times; want none (go test -bench BenchmarkProxiedKeepAliveRequest -benchmem -memprofile shows where)", allocs)
	}
}

// BenchmarkProxiedKeepAliveRequests64 is BenchmarkProxiedKeepAliveRequest
// from 64 client connections at once, the concurrency of the side by
// side with nginx (bench/proxy-vs-nginx.sh): with -mutexprofile and
// -blockprofile it shows what requests wait on for each other.
func BenchmarkProxiedKeepAliveRequests64(b *testing.B) {
	first := proxiedKeepAlive(b, 200)
	addr := first.c.RemoteAddr().String()
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		rc := &rawClient{c: c, req: first.req, answer: make([]byte, len(rawAppAnswer))}
		for pb.Next() {
			if err := rc.roundTrip(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestARequestFindsItsAppsConnectionsWithoutTheSharedLock: once an app's
// pool exists, a request reaches it without the pools' lock, which every
// request of every app once took (96% of the contended time at 64
// connections, docs/bench.md), nor the wakes' lock, which every request
// to an app that is up took to ask for a wake under way. The test holds
// both throughout.
func TestARequestFindsItsAppsConnectionsWithoutTheSharedLock(t *testing.T) {
	app := rawApp(t)
	p := New(Options{Logf: t.Logf})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	c := dialRaw(t, addr, "shop.example.com")
	if err := c.roundTrip(); err != nil {
		t.Fatal(err)
	}
	p.pools.mu.Lock()
	defer p.pools.mu.Unlock()
	p.wakes.mu.Lock()
	defer p.wakes.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.roundTrip() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		c.c.Close()
		t.Fatal("a request to an app already connected to waited on a lock shared by every request for a minute")
	}
}

// TestAConnectionTheFullPoolWouldCloseServesItsClientsNextRequest: when a
// request ends with its app's pool full (the end of a burst), its app
// connection stays with the client connection and carries that client's
// next request, where it used to be closed and the next request dialled
// a new one (at 1,000 connections, one request in five, docs/bench.md).
func TestAConnectionTheFullPoolWouldCloseServesItsClientsNextRequest(t *testing.T) {
	gate := make(chan struct{})
	from := make(chan string, 2)
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from <- r.RemoteAddr
		if r.URL.Path == "/slow" {
			<-gate
		}
		io.WriteString(w, "ok\n")
	}))
	p := New(Options{Logf: t.Logf})
	addr := serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func(path string) {
		t.Helper()
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
	}
	answered := func() {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "ok\n" {
			t.Fatalf("answered %q, %v", b, err)
		}
	}
	ask("/slow")
	first := <-from
	// While the first request waits on the app, its pool fills up.
	p.pools.mu.Lock()
	var bp *backendPool
	for _, b := range p.pools.byAddr {
		bp = b
	}
	p.pools.mu.Unlock()
	for range maxIdlePerBackend {
		bc, err := p.pools.dial(context.Background(), bp)
		if err != nil {
			t.Fatal(err)
		}
		if !p.pools.put(bc, time.Now()) {
			t.Fatal("the pool was full before it had maxIdlePerBackend connections")
		}
	}
	close(gate)
	answered()
	ask("/fast")
	if second := <-from; second != first {
		t.Errorf("the client's next request came to the app from %s, its first from %s: its connection was closed", second, first)
	}
	answered()
}

// TestClientConnectionsHoldNoMoreOfAnAppsConnectionsThanItsCap: the
// connections client connections keep past a full pool are bounded per
// app by MaxBackendConnsPerApp, so an app has at most that many in use,
// as many held and its pool's idle ones; one past the bound is closed.
func TestClientConnectionsHoldNoMoreOfAnAppsConnectionsThanItsCap(t *testing.T) {
	app := rawApp(t)
	p := New(Options{Logf: t.Logf, MaxBackendConnsPerApp: 2})
	bp := p.pools.pool("127.0.0.1:" + strconv.Itoa(app))
	var hs []*h1conn
	var last *bconn
	for range 3 {
		bc, err := p.pools.dial(context.Background(), bp)
		if err != nil {
			t.Fatal(err)
		}
		h := &h1conn{p: p}
		h.hold(bc)
		hs, last = append(hs, h), bc
	}
	if hs[0].held == nil || hs[1].held == nil {
		t.Fatal("the first two connections past a full pool were not held")
	}
	if hs[2].held != nil {
		t.Fatal("a third connection was held past MaxBackendConnsPerApp = 2")
	}
	if err := last.Close(); err == nil {
		t.Fatal("the third connection, not held, was left open")
	}
	hs[0].unhold().Close()
	bc, err := p.pools.dial(context.Background(), bp)
	if err != nil {
		t.Fatal(err)
	}
	if hs[2].hold(bc); hs[2].held == nil {
		t.Fatal("a connection was not held once one of the two held had been taken back")
	}
	hs[1].unhold().Close()
	hs[2].unhold().Close()
}
