package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

func TestEachAnswerOfTheProxyHasItsStatusAndSentence(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	app := backend(t, "shop")
	apply(t, p,
		routeTo("shop.example.com", "shop", app, route.Up),
		routeTo("stopped.example.com", "stopped", app, route.Down),
		routeTo("gone.example.com", "gone", closedPort(t), route.Up),
	)
	c := &http.Client{}
	for _, tc := range []struct {
		host   string
		status int
		body   string
	}{
		{"shop.example.com", 200, "shop answers shop.example.com\n"},
		{"SHOP.Example.COM:8080", 200, "shop answers SHOP.Example.COM:8080\n"},
		{"shop.example.com.", 200, "shop answers shop.example.com.\n"},
		{"nobody.example.com", 404, "No app on this host answers for that hostname.\n"},
		{"stopped.example.com", 503, "This app is not running.\n"},
		{"gone.example.com", 502, "This app did not answer.\n"},
	} {
		t.Run(tc.host, func(t *testing.T) {
			got := get(t, c, base, tc.host)
			must(t, got, tc.status, tc.body)
			if tc.status != 200 && got.header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", got.header.Get("Content-Type"))
			}
		})
	}
}

func TestARequestWithoutAHostIsRefused(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{})
	// HTTP/1.0 may leave Host out; net/http itself refuses an HTTP/1.1
	// request without one before the proxy sees it.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprint(conn, "GET / HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	must(t, result{status: resp.StatusCode, body: string(b)}, 400, "This request names no host.\n")
}

func TestTheAppSeesTheHostItWasAskedByAndWhoAsked(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	got := make(chan http.Header, 1)
	s := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Clone()
		h.Set("X-Seen-Host", r.Host)
		got <- h
	}))
	apply(t, p, routeTo("shop.example.com", "shop", s, route.Up))
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "")
	h := <-got
	if h.Get("X-Seen-Host") != "shop.example.com" || h.Get("X-Forwarded-For") != "127.0.0.1" || h.Get("X-Forwarded-Host") != "shop.example.com" || h.Get("X-Forwarded-Proto") != "http" {
		t.Fatalf("the app saw %v", h)
	}
}

func TestTheRoutingTableIsReplacedWholeUnderConcurrentRequests(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	a, b := backend(t, "a"), backend(t, "b")
	table := func(port int, name string) []route.Route {
		var rs []route.Route
		for i := range 8 {
			rs = append(rs, routeTo(fmt.Sprintf("h%d.example.com", i), name, port, route.Up))
		}
		return rs
	}
	ta, tb := table(a, "a"), table(b, "b")
	apply(t, p, ta...)
	stop := make(chan struct{})
	var served atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				host := fmt.Sprintf("h%d.example.com", (i+n)%8)
				r, err := ask(c, base, host)
				if err != nil {
					errs <- err
					return
				}
				if r.status != 200 || (r.body != "a answers "+host+"\n" && r.body != "b answers "+host+"\n") {
					errs <- fmt.Errorf("%s: %d %q", host, r.status, r.body)
					return
				}
				served.Add(1)
			}
		}()
	}
	// Swap the tables back and forth until the callers have been
	// through a few hundred requests between the swaps.
	for i := 0; served.Load() < 400; i++ {
		if i%2 == 0 {
			apply(t, p, tb...)
		} else {
			apply(t, p, ta...)
		}
		time.Sleep(100 * time.Microsecond)
	}
	apply(t, p, tb...)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	must(t, get(t, &http.Client{}, base, "h3.example.com"), 200, "b answers h3.example.com\n")
}

func TestConcurrentCallersToASleepingAppShareOneWake(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	app := backend(t, "shop")
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Sleeping))

	const callers = 10
	results := make(chan result, callers)
	for range callers {
		go func() {
			r, err := ask(&http.Client{}, base, "shop.example.com")
			if err != nil {
				r.body = err.Error()
			}
			results <- r
		}()
	}
	waitFor(t, "every caller waits on the wake", func() bool { return p.meters.Of("shop").Open() == callers })
	// The wake runs on a goroutine of its own, which a loaded machine may
	// not have run yet when the last caller arrives.
	waitFor(t, "the wake begins", func() bool { return w.calls.Load() > 0 })
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes for %d concurrent callers, want 1", n, callers)
	}
	close(w.release)
	for range callers {
		must(t, <-results, 200, "shop answers shop.example.com\n")
	}

	// Until the daemon's next table says up, the woken app answers
	// without another wake.
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes after the app woke, want 1", n)
	}
	// A new table that says it sleeps (it went back to sleep) wakes it again.
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Sleeping))
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if n := w.calls.Load(); n != 2 {
		t.Fatalf("%d wakes after the app slept again, want 2", n)
	}
}

func TestAClientThatGivesUpDoesNotCancelTheWakeOthersWaitOn(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Sleeping))

	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := askCtx(ctx, &http.Client{}, base, "shop.example.com"); first <- err }()
	waitFor(t, "the first caller waits", func() bool { return p.meters.Of("shop").Open() == 1 })
	second := make(chan result, 1)
	go func() { second <- get(t, &http.Client{}, base, "shop.example.com") }()
	waitFor(t, "the second caller waits", func() bool { return p.meters.Of("shop").Open() == 2 })
	cancel()
	if err := <-first; err == nil {
		t.Fatal("the cancelled request succeeded")
	}
	close(w.release)
	must(t, <-second, 200, "shop answers shop.example.com\n")
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
}

func TestAnUpgradeRequestWhileWakingGets503WithRetryAfter(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	app := backend(t, "chat")
	apply(t, p, routeTo("chat.example.com", "chat", app, route.Sleeping))

	// The upgrade starts the wake but is not held by it.
	got := get(t, &http.Client{}, base, "chat.example.com", "Connection", "Upgrade", "Upgrade", "websocket")
	must(t, got, 503, "This app is starting; try again in a moment.\n")
	if got.header.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q, want 3", got.header.Get("Retry-After"))
	}
	waitFor(t, "the wake starts", func() bool { return w.calls.Load() == 1 })
	// While the wake runs, the daemon may already say up: still 503.
	apply(t, p, routeTo("chat.example.com", "chat", app, route.Up))
	must(t, get(t, &http.Client{}, base, "chat.example.com", "Connection", "Upgrade", "Upgrade", "websocket"), 503, "This app is starting; try again in a moment.\n")
	close(w.release)
	waitFor(t, "the wake ends", func() bool { return p.wakes.running("chat") == nil })
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
}

func TestARequestToAnAppMarkedUpWaitsForTheWakeUnderWay(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	app := backend(t, "shop")
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Sleeping))
	first := make(chan result, 1)
	go func() { first <- get(t, &http.Client{}, base, "shop.example.com") }()
	waitFor(t, "the wake starts", func() bool { return w.calls.Load() == 1 })
	apply(t, p, routeTo("shop.example.com", "shop", app, route.Up))
	second := make(chan result, 1)
	go func() { second <- get(t, &http.Client{}, base, "shop.example.com") }()
	waitFor(t, "both callers wait", func() bool { return p.meters.Of("shop").Open() == 2 })
	close(w.release)
	must(t, <-first, 200, "shop answers shop.example.com\n")
	must(t, <-second, 200, "shop answers shop.example.com\n")
}

func TestAWakeThatFailsAnswers503WithTheReasonAndRetryAfter(t *testing.T) {
	w := &fakeWaker{err: fmt.Errorf("wake shop: %w", errBoom)}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Sleeping))
	got := get(t, &http.Client{}, base, "shop.example.com")
	must(t, got, 503, "This app could not be woken: wake shop: the guest went down while waking.\n")
	if got.header.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q, want 3", got.header.Get("Retry-After"))
	}
	// A failed wake is not remembered: the next request tries again.
	w.mu.Lock()
	w.err = nil
	w.mu.Unlock()
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if n := w.calls.Load(); n != 2 {
		t.Fatalf("%d wakes, want 2", n)
	}
}

func TestAnAppTheDaemonWillNotWakeIsNotRunning(t *testing.T) {
	w := &fakeWaker{err: fmt.Errorf("wake shop: %w", route.ErrNotRunning)}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Sleeping))
	got := get(t, &http.Client{}, base, "shop.example.com")
	must(t, got, 503, "This app is not running.\n")
}

func TestAWakeIsBoundedByItsTimeout(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})} // never released
	p := New(Options{Waker: w, Logf: t.Logf, WakeTimeout: 50 * time.Millisecond})
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Sleeping))
	got := get(t, &http.Client{}, base, "shop.example.com")
	must(t, got, 503, "This app could not be woken: context deadline exceeded.\n")
	if got.header.Get("Retry-After") != "5" {
		t.Fatalf("Retry-After %q, want the default 5", got.header.Get("Retry-After"))
	}
}

func TestActivityIsBusyDuringASlowRequestAndRecordsItsEnd(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	entered, finish := make(chan struct{}), make(chan struct{})
	slow := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-finish
		io.WriteString(w, "done\n")
	}))
	apply(t, p, routeTo("slow.example.com", "slow", slow, route.Up))
	if last, busy := p.Activity("slow"); !last.IsZero() || busy {
		t.Fatalf("before any request: %v %v", last, busy)
	}
	before := time.Now()
	done := make(chan result, 1)
	go func() { done <- get(t, &http.Client{}, base, "slow.example.com") }()
	<-entered
	last, busy := p.Activity("slow")
	if !busy || last.Before(before) {
		t.Fatalf("during the request: last %v busy %v", last, busy)
	}
	time.Sleep(20 * time.Millisecond)
	endsAfter := time.Now()
	close(finish)
	must(t, <-done, 200, "done\n")
	waitFor(t, "the request closes", func() bool { _, busy := p.Activity("slow"); return !busy })
	if last, _ := p.Activity("slow"); last.Before(endsAfter) {
		t.Fatalf("last activity %v is before the request ended (after %v)", last, endsAfter)
	}
}

func TestBodyBytesFromTheClientCountAsActivity(t *testing.T) {
	clock := &manualClock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	p := New(Options{Logf: t.Logf, Now: clock.Now})
	base := "http://" + serve(t, p, ListenConfig{})
	read := make(chan int, 8)
	up := httpServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 64)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				read <- n
			}
			if err != nil {
				break
			}
		}
		io.WriteString(w, "stored\n")
	}))
	apply(t, p, routeTo("up.example.com", "up", up, route.Up))
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, base+"/", pr)
	req.Host = "up.example.com"
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	waitFor(t, "the request opens", func() bool { _, busy := p.Activity("up"); return busy })
	clock.Add(time.Minute)
	pw.Write([]byte("chunk"))
	<-read
	if last, _ := p.Activity("up"); !last.Equal(clock.Now()) {
		t.Fatalf("last activity %v after body bytes at %v", last, clock.Now())
	}
	pw.Close()
	if resp := <-done; resp != nil {
		resp.Body.Close()
	}
}

func TestAcceptedConnectionsHaveNagleOff(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nl := noDelayListener{l}
	defer nl.Close()
	go func() {
		c, err := net.Dial("tcp", l.Addr().String())
		if err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := nl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !noDelay(t, c.(*net.TCPConn)) {
		t.Fatal("TCP_NODELAY is off on an accepted connection")
	}
}

func TestHostsAreMatchedWithoutPortCaseOrTrailingDot(t *testing.T) {
	for in, want := range map[string]string{
		"Shop.Example.com":      "shop.example.com",
		"shop.example.com:443":  "shop.example.com",
		"shop.example.com.":     "shop.example.com",
		"[::1]:80":              "::1",
		"":                      "",
		" shop.example.com:80 ": "shop.example.com",
	} {
		if got := normalHost(in); got != want {
			t.Errorf("normalHost(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTwoAppsNamingOneHostnameLeaveItToTheFirst(t *testing.T) {
	var logged []string
	p := New(Options{Logf: func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) }})
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p,
		routeTo("shop.example.com", "one", backend(t, "one"), route.Up),
		routeTo("SHOP.example.com", "two", backend(t, "two"), route.Up),
	)
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "one answers shop.example.com\n")
	if len(logged) != 1 || !strings.Contains(logged[0], "both one and two") {
		t.Fatalf("logged %q", logged)
	}
}

// httpServer runs h on loopback and returns its port.
func httpServer(t testing.TB, h http.Handler) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestTheTrafficOfAnAppThatLostItsHostnamesIsForgotten(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if last, _ := p.Activity("shop"); last.IsZero() {
		t.Fatal("no activity after a request")
	}
	// The client has its answer before the proxy has counted the request
	// done; an app still busy is rightly not forgotten.
	waitFor(t, "the request to be counted done", func() bool { _, busy := p.Activity("shop"); return !busy })
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Down))
	if last, _ := p.Activity("shop"); last.IsZero() {
		t.Fatal("a new table forgot an app it still routes")
	}
	apply(t, p)
	if last, busy := p.Activity("shop"); !last.IsZero() || busy {
		t.Fatalf("an app with no hostname left reports %v %v", last, busy)
	}
}

func TestASleepingAppIsNotRunningUntilTheProxyHasAWaker(t *testing.T) {
	p := New(Options{Logf: t.Logf})
	base := "http://" + serve(t, p, ListenConfig{})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Sleeping))
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 503, "This app is not running.\n")
	w := &fakeWaker{}
	p.SetWaker(w)
	must(t, get(t, &http.Client{}, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
}
