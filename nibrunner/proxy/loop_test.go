package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
	"golang.org/x/sys/unix"
)

// TestTheLoopReadsASocketOnlyOnceEpollSaysItHasBytes is the loop's
// claim (loop.go): a kept-alive request costs no read that finds its
// socket empty, on the client's side or the app's. The runtime's poller
// makes one such read per socket per request (docs/bench.md), which is
// what the loop was built to avoid.
func TestTheLoopReadsASocketOnlyOnceEpollSaysItHasBytes(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{Loops: 1})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	ask := func() {
		t.Helper()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "shop answers shop.example.com\n" {
			t.Fatalf("answered %q, %v", b, err)
		}
	}
	ask() // the app's connection is dialled
	const requests = 400
	before := loopEmptyReads.Load()
	for range requests {
		ask()
	}
	// A read can still find a socket empty when epoll's word and the
	// bytes cross (the word came with bytes a read already took); one
	// request in twenty is far below the runtime's two in one.
	if n := loopEmptyReads.Load() - before; n > requests/20 {
		t.Fatalf("%d reads found their socket empty over %d requests, want at most %d", n, requests, requests/20)
	}
}

// TestServingStopsAtOnceWithKeptAliveConnectionsWaitingInTheLoop: an idle
// connection's task waits in its loop on epoll, not on a read the runtime
// can interrupt; closing it from the server's goroutine must still end
// that wait, or Serve would wait out IdleTimeout (2 minutes) for each.
func TestServingStopsAtOnceWithKeptAliveConnectionsWaitingInTheLoop(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	defer p.Close()
	s, cancel, done := serveOwn(t, p, ListenConfig{Loops: 1})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	var conns []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.example.com\r\n\r\n")
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		conns = append(conns, c)
	}
	cancel()
	served(t, done, "with only idle kept-alive connections open: their tasks' waits did not end")
	for i, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err == nil || n > 0 {
			t.Fatalf("connection %d is still open after Serve returned: read %d, %v", i, n, err)
		}
	}
}

// TestAConnectionWaitingOnAWakeDoesNotHoldUpItsLoop: a wait on a wake is
// a wait on a channel, which a task may not do in its loop (every other
// connection of the loop would wait with it): the task leaves the loop
// first, and its loop goes on serving the others meanwhile.
func TestAConnectionWaitingOnAWakeDoesNotHoldUpItsLoop(t *testing.T) {
	w := &fakeWaker{release: make(chan struct{})}
	p := newProxy(t, w)
	base := "http://" + serve(t, p, ListenConfig{Loops: 1})
	apply(t, p,
		routeTo("sleepy.example.com", "sleepy", backend(t, "sleepy"), route.Sleeping),
		routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	woken := make(chan result, 1)
	go func() {
		r, err := ask(&http.Client{}, base, "sleepy.example.com")
		if err != nil {
			r.body = err.Error()
		}
		woken <- r
	}()
	waitFor(t, "the wake begins", func() bool { return w.calls.Load() == 1 })
	for range 3 {
		c := &http.Client{Timeout: 5 * time.Second}
		must(t, get(t, c, base, "shop.example.com"), 200, "shop answers shop.example.com\n")
	}
	select {
	case r := <-woken:
		t.Fatalf("the sleeping app's request was answered before its wake ended: %d %q", r.status, r.body)
	default:
	}
	close(w.release)
	must(t, <-woken, 200, "sleepy answers sleepy.example.com\n")
	// The connection that left the loop goes on serving requests.
	must(t, get(t, &http.Client{}, base, "sleepy.example.com"), 200, "sleepy answers sleepy.example.com\n")
}

// TestConnectionsAreDealtAmongTheLoops: with two loops, each gets
// connections, and a request on either is answered.
func TestConnectionsAreDealtAmongTheLoops(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	defer p.Close()
	s, cancel, done := serveOwn(t, p, ListenConfig{Loops: 2})
	defer func() { cancel(); <-done }()
	if len(s.loops) != 2 {
		t.Fatalf("%d loops, want 2", len(s.loops))
	}
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	for range 4 {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		must(t, get(t, c, "http://"+s.Addr().String(), "shop.example.com"), 200, "shop answers shop.example.com\n")
	}
	// Each loop's app connection went back to the one pool, each marked
	// with its loop: two loops, so two connections (a task takes only
	// its own loop's).
	waitFor(t, "both loops' app connections are pooled", func() bool { return p.pools.idleCount() == 2 })
}

// TestATaskWhoseSocketsAreAlwaysReadyGivesWayToTheOthers: a stream whose
// sockets never make it wait (a large answer between a fast app and a
// fast client) would keep its loop to itself; after opsPerTurn reads and
// writes a task gives way, and the other tasks of the loop go first.
func TestATaskWhoseSocketsAreAlwaysReadyGivesWayToTheOthers(t *testing.T) {
	l, err := newLoop()
	if err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	// pair is a connected socket pair: a loopConn for a task of l, and
	// the other end, with n bytes already written to it.
	pair := func(n int) (*loopConn, int) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[1]) })
		if n > 0 {
			if w, err := unix.Write(fds[1], make([]byte, n)); w != n {
				t.Fatalf("wrote %d of %d bytes: %v", w, n, err)
			}
		}
		c := &loopConn{fd: fds[0], wready: true}
		c.rready.Store(true)
		return c, fds[1]
	}
	run := func(c *loopConn, f func()) {
		l.start(func(tk *task) {
			c.l, c.task = l, tk
			if err := l.add(c); err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			f()
		})
	}
	const reads = 10 * opsPerTurn
	long, _ := pair(reads)
	short, _ := pair(1)
	var longDone, readsBeforeShort int
	done := make(chan struct{}, 2)
	// The long task reads a byte at a time: every read fills its buffer,
	// so none waits.
	run(long, func() {
		b := make([]byte, 1)
		for range reads {
			if _, err := long.Read(b); err != nil {
				t.Error(err)
				break
			}
			longDone++
		}
		done <- struct{}{}
	})
	run(short, func() {
		readsBeforeShort = longDone
		if _, err := short.Read(make([]byte, 1)); err != nil {
			t.Error(err)
		}
		done <- struct{}{}
	})
	// Both are queued before the loop runs, so each of them starts in
	// the same turn, the long one first.
	go l.run()
	<-done
	<-done
	if readsBeforeShort >= reads {
		t.Fatalf("the short task ran only after the long one's %d reads", readsBeforeShort)
	}
	if readsBeforeShort > opsPerTurn {
		t.Fatalf("the short task ran after %d of the long one's reads, want at most opsPerTurn (%d)", readsBeforeShort, opsPerTurn)
	}
}

// TestAnAnswerFramedByItsAppsCloseEndsWhenTheAppCloses: an answer with
// neither Content-Length nor chunks ends at the app's close. The close's
// epoll edge can come before the read that takes the answer's last bytes,
// and comes once: a loop that took that short read for "nothing more"
// would wait for ever on the app (a CI run hung so, 16 minutes).
func TestAnAnswerFramedByItsAppsCloseEndsWhenTheAppCloses(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReader(c)
				if _, err := http.ReadRequest(br); err == nil {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the close\n")
				}
				c.Close()
			}()
		}
	}()
	p := newProxy(t, &fakeWaker{})
	base := "http://" + serve(t, p, ListenConfig{Loops: 1})
	apply(t, p, routeTo("shop.example.com", "shop", l.Addr().(*net.TCPAddr).Port, route.Up))
	c := &http.Client{Timeout: 10 * time.Second}
	for i := range 300 {
		r, err := ask(c, base, "shop.example.com")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if r.status != 200 || r.body != "until the close\n" {
			t.Fatalf("request %d: %d %q", i, r.status, r.body)
		}
	}
}

// TestADeadlineHoldsThoughTheTimerEntryOfAnEarlierWaitIsKept: a task
// keeps its timer entry from one wait to the next (task.wait). A wait to
// an earlier deadline than the entry's still ends at its own, and one to
// a later deadline is not ended by the entry's.
func TestADeadlineHoldsThoughTheTimerEntryOfAnEarlierWaitIsKept(t *testing.T) {
	l, err := newLoop()
	if err != nil {
		t.Fatal(err)
	}
	defer l.stop()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	c := &loopConn{fd: fds[0], wready: true}
	type waited struct {
		ok   bool
		took time.Duration
	}
	results := make(chan waited, 4)
	l.start(func(tk *task) {
		c.l, c.task = l, tk
		if err := l.add(c); err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		// wait waits to deadline after; with a byte sent first, the byte
		// ends the wait. The byte is taken after, as a short read would.
		wait := func(after time.Duration, send bool) {
			if send {
				unix.Write(fds[1], []byte{1})
			}
			began := time.Now()
			ok := tk.wait(c, false, began.Add(after))
			results <- waited{ok, time.Since(began)}
			unix.Read(c.fd, make([]byte, 8))
			c.rready.Store(false)
		}
		wait(10*time.Second, true)        // its entry stays at 10 s
		wait(100*time.Millisecond, false) // must not wait for the entry
		wait(100*time.Millisecond, true)  // its entry stays at 100 ms
		wait(400*time.Millisecond, false) // must not end at the entry
	})
	go l.run()
	want := []struct {
		ok       bool
		min, max time.Duration
	}{
		{true, 0, 5 * time.Second},
		{false, 100 * time.Millisecond, 5 * time.Second},
		{true, 0, 5 * time.Second},
		{false, 400 * time.Millisecond, 5 * time.Second},
	}
	for i, w := range want {
		select {
		case got := <-results:
			if got.ok != w.ok || got.took < w.min || got.took > w.max {
				t.Fatalf("wait %d: ended by its socket %v after %v; want %v, in [%v, %v]", i+1, got.ok, got.took, w.ok, w.min, w.max)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("wait %d has not ended after 10 s", i+1)
		}
	}
}

// TestServingEndsAfterItsGraceWithAnAnswerStillStreaming: an answer's
// body is not timed, so a client reading a stream from a silent app keeps
// its request in flight past shutdown's grace. Serve then closes the
// app's connection as well as the client's, and returns; it used to wait
// on such a request for ever, in both designs.
func TestServingEndsAfterItsGraceWithAnAnswerStillStreaming(t *testing.T) {
	for name, cfg := range map[string]ListenConfig{"loop": {Loops: 1}, "goroutines": {GoroutinePerConnection: true}} {
		t.Run(name, func(t *testing.T) {
			app, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer app.Close()
			appClosed := make(chan struct{})
			go func() {
				c, err := app.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
				// Silent from here on, until the proxy closes.
				c.Read(make([]byte, 1))
				close(appClosed)
			}()
			p := newProxy(t, &fakeWaker{})
			defer p.Close()
			cfg.ShutdownGrace = 100 * time.Millisecond
			s, cancel, done := serveOwn(t, p, cfg)
			apply(t, p, routeTo("stream.example.com", "stream", app.Addr().(*net.TCPAddr).Port, route.Up))
			c, err := net.Dial("tcp", s.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: stream.example.com\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b := make([]byte, 5)
			if _, err := io.ReadFull(resp.Body, b); err != nil || string(b) != "hello" {
				t.Fatalf("the stream began with %q, %v", b, err)
			}
			cancel()
			served(t, done, "past its 100 ms grace while an answer streamed from a silent app")
			select {
			case <-appClosed:
			case <-time.After(5 * time.Second):
				t.Fatal("the app's connection stayed open after Serve returned")
			}
		})
	}
}
