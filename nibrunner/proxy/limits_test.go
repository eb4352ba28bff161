package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// limitRecorder hands on each limit that trips.
type limitRecorder struct {
	mu      sync.Mutex
	tripped map[string]int
	ch      chan string
}

func newLimitRecorder() *limitRecorder {
	return &limitRecorder{tripped: map[string]int{}, ch: make(chan string, 64)}
}

func (r *limitRecorder) ProxyRequest(app string, status int, bytesIn, bytesOut int64) {}
func (r *limitRecorder) WakeWaited(via string, d time.Duration, err error)            {}
func (r *limitRecorder) ProxyLimit(limit string) {
	r.mu.Lock()
	r.tripped[limit]++
	r.mu.Unlock()
	r.ch <- limit
}

// await waits for limit to trip.
func (r *limitRecorder) await(t *testing.T, limit string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case got := <-r.ch:
			if got == limit {
				return
			}
		case <-timeout:
			t.Fatalf("%s never tripped", limit)
		}
	}
}

func limitedProxy(t *testing.T, cfg ListenConfig) (*limitRecorder, string) {
	rec := newLimitRecorder()
	p := New(Options{Logf: t.Logf, Recorder: rec})
	addr := serve(t, p, cfg)
	seen := make(chan string, 64)
	app := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			chunk := strings.Repeat("x", 64<<10)
			for range 1024 { // 64 MiB: more than any socket buffers hold
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			return
		}
		b, _ := io.ReadAll(r.Body)
		seen <- string(b)
		io.WriteString(w, "got "+string(b))
	}))
	apply(t, p, routeTo(smuggleHost, "shop", app, route.Up))
	return rec, addr
}

func TestABodyThatStopsComingIs408AfterTheBodyTimeoutAndOneThatTricklesIsNot(t *testing.T) {
	const timeout = 300 * time.Millisecond
	rec, addr := limitedProxy(t, ListenConfig{BodyTimeout: timeout})

	// A byte every third of the timeout: each read waits less than it.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 4\r\n\r\n")
	for _, b := range "slow" {
		time.Sleep(timeout / 3) // the trickle is the point: slower than a client, faster than the timeout
		io.WriteString(c, string(b))
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the trickled body: %v %v", resp, err)
	}

	// Half a body, then nothing.
	d, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	began := time.Now()
	io.WriteString(d, "POST / HTTP/1.1\r\nHost: shop.example.com\r\nContent-Length: 10\r\n\r\nhalf")
	resp, err = http.ReadResponse(bufio.NewReader(d), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || string(body) != "This request's body did not go on within 300ms.\n" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if waited := time.Since(began); waited < timeout {
		t.Fatalf("answered after %v, before the timeout", waited)
	}
	rec.await(t, limitBodyTimeout)
}

func TestAClientThatReadsNothingOfItsAnswerIsCutOffAfterTheSendTimeout(t *testing.T) {
	rec, addr := limitedProxy(t, ListenConfig{SendTimeout: 300 * time.Millisecond})
	c, err := net.DialTCP("tcp", nil, resolveTCP(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadBuffer(4 << 10)
	io.WriteString(c, "GET /big HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
	// Nothing is read: the proxy's writes fill the socket buffers and
	// then wait, each at most the send timeout.
	rec.await(t, limitSendTimeout)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The connection is reset: what the client did not take is dropped.
	if n, err := io.Copy(io.Discard, c); !errors.Is(err, syscall.ECONNRESET) || n >= 64<<20 {
		t.Fatalf("read %d bytes then %v, want the connection reset short of the 64 MiB answer", n, err)
	}
}

func resolveTCP(t *testing.T, addr string) *net.TCPAddr {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// open dials addr from the loopback address from, and sees the request
// through (so the proxy counts the connection before the next dial).
func openFrom(t *testing.T, from, addr string) (net.Conn, int, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return c, 0, err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	return c, resp.StatusCode, string(b)
}

func TestConnectionsPastTheCapsAre503AndCounted(t *testing.T) {
	t.Run("per client", func(t *testing.T) {
		rec, addr := limitedProxy(t, ListenConfig{MaxConnectionsPerClient: 2})
		for range 2 {
			if _, status, body := openFrom(t, "127.0.0.1", addr); status != 200 {
				t.Fatalf("under the cap: %d %q", status, body)
			}
		}
		_, status, body := openFrom(t, "127.0.0.1", addr)
		if status != 503 || body != tooManyFromClient.text+"\n" {
			t.Fatalf("a third from one address: %d %q", status, body)
		}
		rec.await(t, limitClientConnections)
		if _, status, body := openFrom(t, "127.0.0.2", addr); status != 200 {
			t.Fatalf("another address: %d %q", status, body)
		}
	})
	t.Run("global", func(t *testing.T) {
		rec, addr := limitedProxy(t, ListenConfig{MaxConnections: 2})
		first, status, _ := openFrom(t, "127.0.0.1", addr)
		if status != 200 {
			t.Fatal(status)
		}
		if _, status, _ := openFrom(t, "127.0.0.2", addr); status != 200 {
			t.Fatal(status)
		}
		_, status, body := openFrom(t, "127.0.0.3", addr)
		if status != 503 || body != tooManyConnections.text+"\n" {
			t.Fatalf("a third connection: %d %q", status, body)
		}
		rec.await(t, limitConnections)
		// A connection that closes gives its place back.
		first.Close()
		waitFor(t, "a place to come free", func() bool {
			_, status, _ := openFrom(t, "127.0.0.4", addr)
			return status == 200
		})
	})
}

func TestAHeadTrickledPastItsTimeoutIsClosedAndOneTooBigIs431BothCounted(t *testing.T) {
	rec, addr := limitedProxy(t, ListenConfig{ReadHeaderTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.exa")
	rec.await(t, limitHeaderTimeout)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, c); n != 0 || err != nil {
		t.Fatalf("read %d bytes, %v; want the connection closed unanswered", n, err)
	}
	if status, _ := exchange(t, addr, manyFields(257)); status != 431 {
		t.Fatalf("257 fields: %d, want 431", status)
	}
	rec.await(t, limitHeaderSize)
}

// TestTheNextHeadOnAKeptAliveConnectionIsTimedAsTheFirstIs: the header
// deadline is armed only when a head needs more than the bytes that woke
// its connection; a second request trickled after a first answered is
// cut at ReadHeaderTimeout all the same, not at the idle timeout (two
// minutes here).
func TestTheNextHeadOnAKeptAliveConnectionIsTimedAsTheFirstIs(t *testing.T) {
	rec, addr := limitedProxy(t, ListenConfig{ReadHeaderTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+smuggleHost+"\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the first request: %d, %v", resp.StatusCode, err)
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.exa")
	rec.await(t, limitHeaderTimeout)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, br); n != 0 || err != nil {
		t.Fatalf("read %d bytes, %v; want the connection closed unanswered", n, err)
	}
}
