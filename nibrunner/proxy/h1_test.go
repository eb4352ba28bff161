package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// rawExchange writes one request on a new connection to addr and reads
// the response.
func rawExchange(t *testing.T, addr, request string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHopByHopFieldsStopAtTheProxyAndForwardingOnesAreAppended(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	seen := make(chan http.Header, 1)
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.Header.Clone()
		w.Header().Set("Connection", "X-App-Hop")
		w.Header().Set("X-App-Hop", "for the proxy only")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-App-End", "for the client")
		io.WriteString(w, "ok\n")
	}))
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))

	resp, body := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n"+
		"Connection: keep-alive, X-Secret\r\nX-Secret: hop\r\nKeep-Alive: timeout=9\r\nProxy-Connection: keep-alive\r\n"+
		"TE: gzip\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: ftp\r\nX-End: end to end\r\n\r\n")
	h := <-seen
	for _, name := range []string{"X-Secret", "Keep-Alive", "Proxy-Connection", "Te"} {
		if v := h.Get(name); v != "" {
			t.Errorf("the app was sent %s: %q", name, v)
		}
	}
	if got := h.Get("X-Forwarded-For"); got != "203.0.113.9, 127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the client's list with the proxy's peer appended", got)
	}
	if got := h.Get("X-Forwarded-Proto"); got != "http" {
		t.Errorf("X-Forwarded-Proto %q, want http (the client's claim replaced)", got)
	}
	if h.Get("X-End") != "end to end" || h.Get("X-Request-Id") == "" {
		t.Errorf("the app saw %v", h)
	}
	if resp.StatusCode != 200 || body != "ok\n" || resp.Header.Get("X-App-End") != "for the client" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp.Header.Get("X-App-Hop") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("the client was sent the app's hop-by-hop fields: %v", resp.Header)
	}
}

func TestBodiesCrossBothWaysWhateverTheirFraming(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.New()
		n, _ := io.Copy(sum, r.Body)
		if r.URL.Query().Get("stream") != "" {
			// No Content-Length: net/http chunks it.
			for i := range 3 {
				fmt.Fprintf(w, "part %d\n", i)
				w.(http.Flusher).Flush()
			}
			return
		}
		w.Header().Set("X-Body-Length", fmt.Sprint(n))
		fmt.Fprintf(w, "%x\n", sum.Sum(nil))
	}))
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	c := &http.Client{}
	body := bytes.Repeat([]byte("nibrunner "), 200_000) // 2 MB
	want := fmt.Sprintf("%x\n", sha256.Sum256(body))
	for _, tc := range []struct {
		name string
		body io.Reader
		size int64
	}{
		{"content-length", bytes.NewReader(body), int64(len(body))},
		{"chunked", io.MultiReader(bytes.NewReader(body)), -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, base+"/upload", tc.body)
			req.Host, req.ContentLength = "shop.example.com", tc.size
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if string(got) != want || resp.Header.Get("X-Body-Length") != fmt.Sprint(len(body)) {
				t.Fatalf("the app saw %s bytes hashing to %q, want %d bytes %q", resp.Header.Get("X-Body-Length"), got, len(body), want)
			}
		})
	}
	t.Run("streamed answer", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodGet, base+"/?stream=1", nil)
		req.Host = "shop.example.com"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		if string(got) != "part 0\npart 1\npart 2\n" || len(resp.TransferEncoding) == 0 {
			t.Fatalf("got %q framed %v", got, resp.TransferEncoding)
		}
	})
	t.Run("head", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodHead, base+"/", nil)
		req.Host = "shop.example.com"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("HEAD got %d", resp.StatusCode)
		}
		// The connection is still good for the next request.
		must(t, get(t, c, base, "shop.example.com"), 200, fmt.Sprintf("%x\n", sha256.Sum256(nil)))
	})
}

func TestAClientExpectingContinueSendsItsBodyOnceTheAppAsks(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body) // reading is what makes net/http send 100 Continue
		fmt.Fprintf(w, "got %s\n", b)
	}))
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	// A long ExpectContinueTimeout: the body goes only after a real 100.
	c := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	req, _ := http.NewRequest(http.MethodPut, base+"/", strings.NewReader("the body"))
	req.Host = "shop.example.com"
	req.Header.Set("Expect", "100-continue")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "got the body\n" {
		t.Fatalf("got %q", b)
	}
}

func TestAppConnectionsAreKeptAliveAndAStaleOneIsRetried(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	var opened atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }))
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	apply(t, p, routeTo("shop.example.com", "shop", portOf(t, s.URL), route.Up))
	c := &http.Client{}
	for range 20 {
		must(t, get(t, c, base, "shop.example.com"), 200, "ok\n")
	}
	if n := opened.Load(); n != 1 {
		t.Fatalf("20 requests in a row opened %d connections to the app, want 1", n)
	}
	// The app drops its idle connections: the next request meets a closed
	// one in the pool and is sent again on a new one, unseen by the client.
	s.CloseClientConnections()
	must(t, get(t, c, base, "shop.example.com"), 200, "ok\n")
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d connections after the app dropped its idle one, want 2", n)
	}
}

func TestASlowlorisClientDoesNotDelayANormalRequest(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{ReadHeaderTimeout: 2 * time.Second})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	// Fifty clients trickle their headers a byte at a time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	cut := make(chan time.Duration, 50)
	for range 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			began := time.Now()
			for _, b := range []byte("GET / HTTP/1.1\r\nHost: shop.example.com\r\nX-Slow: " + strings.Repeat("z", 1000)) {
				if _, err := c.Write([]byte{b}); err != nil {
					cut <- time.Since(began)
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	began := time.Now()
	must(t, get(t, &http.Client{}, "http://"+addr, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if d := time.Since(began); d > time.Second {
		t.Fatalf("a normal request took %v beside the slow clients", d)
	}
	// And the slow ones are cut off at the header timeout.
	select {
	case d := <-cut:
		if d > 5*time.Second {
			t.Fatalf("a slow client was cut off after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no slow client was cut off within 10 s of a 2 s header timeout")
	}
}

func TestEveryRequestLeavesOneAccessLogLine(t *testing.T) {
	var buf testenv.SyncBuffer
	p := New(Options{Logf: t.Logf, AccessLog: &buf})
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	c := &http.Client{}
	must(t, get(t, c, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	must(t, get(t, c, base, "nobody.example.com"), 404, unknownHost.text+"\n")
	// A line is written once its answer is sent.
	waitFor(t, "two lines are logged", func() bool { return strings.Count(buf.String(), "\n") >= 2 })
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines for 2 requests: %v", len(lines), lines)
	}
	first, second := lines[0], lines[1]
	if first["msg"] != "request" || first["app"] != "shop" || first["status"] != 200.0 || first["bytes_out"] != float64(len("shop answers shop.example.com\n")) ||
		first["method"] != "GET" || first["host"] != "shop.example.com" || first["target"] != "/" || first["client"] != "127.0.0.1" || first["id"] == "" || first["duration_s"] == nil {
		t.Errorf("first line %v", first)
	}
	if second["app"] != "" || second["status"] != 404.0 || second["id"] == first["id"] {
		t.Errorf("second line %v", second)
	}
}

// openFiles is how many file descriptors this process holds.
func openFiles(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd here")
	}
	return len(es)
}

func TestAThousandConnectionsAcrossTwentyAppsLeaveNothingBehind(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{MaxConnectionsPerClient: 2000}) // every client is 127.0.0.1
	var routes []route.Route
	for i := range 20 {
		name := fmt.Sprintf("app%d", i)
		routes = append(routes, routeTo(name+".example.com", name, backend(t, name), route.Up))
	}
	apply(t, p, routes...)
	// Settle what the backends and the proxy hold before counting.
	must(t, get(t, &http.Client{}, "http://"+addr, "app0.example.com"), 200, "app0 answers app0.example.com\n")
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	p.pools.closeIdle(false)
	waitFor(t, "the warm-up's connections close", func() bool { return p.pools.idleCount() == 0 })
	goroutines, files := runtime.NumGoroutine(), openFiles(t)

	conns := make([]net.Conn, 1000)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(conns))
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			host := fmt.Sprintf("app%d.example.com", i%20)
			br := bufio.NewReader(c)
			for range 3 {
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b), fmt.Sprintf("app%d ", i%20)) {
					errs <- fmt.Errorf("%s: %d %q", host, resp.StatusCode, b)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := p.pools.idleCount(); n > 20*maxIdlePerBackend {
		t.Fatalf("%d idle app connections, more than %d per app", n, maxIdlePerBackend)
	}
	for _, c := range conns {
		c.Close()
	}
	// Once the clients are gone and the pooled app connections are let
	// go (they would time out on their own), nothing is left.
	waitFor(t, "the proxy's connection goroutines end", func() bool {
		p.pools.closeIdle(false)
		return runtime.NumGoroutine() <= goroutines+2 && openFiles(t) <= files+2
	})
}

func TestABigCookieCrossesAndAHeadOver64KiBIsRefused(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	seen := make(chan int, 1)
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen <- len(r.Header.Get("Cookie")) }))
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	cookie := strings.Repeat("c", 12<<10) // three times the read buffer
	resp, _ := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: shop.example.com\r\nCookie: "+cookie+"\r\n\r\n")
	if resp.StatusCode != 200 || <-seen != len(cookie) {
		t.Fatalf("a 12 KiB cookie: %d", resp.StatusCode)
	}
	resp, body := rawExchange(t, addr, "GET / HTTP/1.1\r\nHost: shop.example.com\r\nCookie: "+strings.Repeat("c", 70<<10)+"\r\n\r\n")
	if resp.StatusCode != 431 {
		t.Fatalf("a 70 KiB header: %d %q", resp.StatusCode, body)
	}
}
