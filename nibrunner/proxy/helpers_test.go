package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/route"
)

// *daemon.Daemon is what nibrunnerd gives the proxy to wake apps.
var _ Waker = (*daemon.Daemon)(nil)

// backend is an app on loopback that says who it is and which Host it
// was asked by.
func backend(t testing.TB, name string) int {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, name+" answers "+r.Host+"\n")
	}))
	t.Cleanup(s.Close)
	return portOf(t, s.URL)
}

func portOf(t testing.TB, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedPort is a loopback port nothing listens on.
func closedPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// serveOwn runs p on a loopback port (unless cfg names an address), for
// a test that stops it itself: cancel stops it, and done says how Serve
// returned.
func serveOwn(t testing.TB, p *Proxy, cfg ListenConfig) (*Server, context.CancelFunc, chan error) {
	t.Helper()
	if cfg.Address == "" {
		cfg.Address = "127.0.0.1:0"
	}
	s, err := p.Listen(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	return s, cancel, done
}

// served wants the Serve behind done to return, without an error, within
// 5 s of its stop; after says what kept it going if it does not.
func served(t testing.TB, done <-chan error, after string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve went on for 5 s " + after)
	}
}

// serve runs p on a loopback port until the test ends and returns its
// address.
func serve(t testing.TB, p *Proxy, cfg ListenConfig) string {
	t.Helper()
	s, cancel, done := serveOwn(t, p, cfg)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy serve: %v", err)
		}
		p.Close()
	})
	return s.Addr().String()
}

func newProxy(t testing.TB, w Waker) *Proxy {
	return New(Options{Waker: w, Logf: t.Logf, RetryAfter: 3 * time.Second})
}

type result struct {
	status int
	body   string
	header http.Header
	proto  string
}

// get asks the proxy at addr for / on host.
func get(t testing.TB, c *http.Client, base, host string, hdr ...string) result {
	t.Helper()
	r, err := ask(c, base, host, hdr...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func ask(c *http.Client, base, host string, hdr ...string) (result, error) {
	return askCtx(context.Background(), c, base, host, hdr...)
}

func askCtx(ctx context.Context, c *http.Client, base, host string, hdr ...string) (result, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return result{}, err
	}
	req.Host = host
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, err
	}
	return result{resp.StatusCode, string(b), resp.Header, resp.Proto}, nil
}

// fakeWaker counts wakes; each one waits for release (when set) and
// then returns err.
type fakeWaker struct {
	calls   atomic.Int64
	release chan struct{}
	mu      sync.Mutex
	err     error
}

func (f *fakeWaker) Wake(ctx context.Context, app string) error {
	f.calls.Add(1)
	if f.release != nil {
		select {
		case <-f.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func routeTo(host, app string, port int, state route.State) route.Route {
	return route.Route{Hostname: host, AppID: app, HostPort: port, State: state}
}

func apply(t testing.TB, p *Proxy, routes ...route.Route) {
	t.Helper()
	if err := p.Apply(context.Background(), routes); err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, got result, status int, body string) {
	t.Helper()
	if got.status != status || got.body != body {
		t.Fatalf("got %d %q, want %d %q", got.status, got.body, status, body)
	}
	if body != "" && !strings.HasSuffix(got.body, "\n") {
		t.Fatalf("body %q has no trailing newline", got.body)
	}
}

var errBoom = errors.New("the guest went down while waking")
