package raw

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/route"
)

// The per-port budget: many flows of one waking app's port queue no
// more than PortQueueBytes together (before: each flow its own 1 MiB,
// 4 GiB over 4096 flows); past it datagrams are dropped and counted.
func TestUDPFlowsOfAWakingPortQueueNoMoreThanThePortsBudgetTogether(t *testing.T) {
	guestAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	var guest atomic.Pointer[echoGuest]
	w := &gatedWaker{release: make(chan struct{}), asked: newBell()}
	arrived := newBell()
	w.onWake = func() { guest.Store(listenEchoRinging(t, guestAddr, arrived)) }
	rec := &countingRecorder{changed: newBell()}
	const budget, size, flows, each = 64 << 10, 1000, 32, 20 // 640 KB sent, 64 KiB kept
	r := newRelay(t, Options{QueueDatagrams: 256, QueueBytes: 1 << 20, PortQueueBytes: budget, Recorder: rec})
	r.SetWaker(w)
	hp := freePort(t)
	addr := applyPort(t, r, route.Port{AppID: "dns", Index: 1, HostPort: hp, Addr: guestAddr, State: route.Sleeping})
	pt := r.ports[hp]
	// accounted is the datagrams the relay has read: queued or dropped
	// for the port's budget. Each flow sends once the last one's are
	// all read, so the port's socket buffer never overflows.
	// The relay takes a flow's lock before its port's (send reserves the
	// budget under the flow's), so the flows are listed under the port's
	// lock and read after it is let go: holding both the other way round
	// deadlocked with the relay.
	accounted := func() int {
		pt.mu.Lock()
		flows := make([]*flow, 0, len(pt.flows))
		for _, f := range pt.flows {
			flows = append(flows, f)
		}
		pt.mu.Unlock()
		n := 0
		for _, f := range flows {
			f.mu.Lock()
			n += len(f.queue)
			f.mu.Unlock()
		}
		return n + rec.limit(limitUDPPortBudget)
	}
	payload := make([]byte, size)
	for i := range flows {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for j := range each {
			copy(payload, fmt.Sprintf("flow %02d datagram %02d", i, j))
			c.Write(payload)
		}
		// A flow's first datagram starts a goroutine of its own; the
		// rest are counted as the relay reads them.
		waitFor(t, "the flow's datagrams are read", func() bool { return accounted() == (i+1)*each })
	}
	kept := budget / size
	if n := rec.limit(limitUDPPortBudget); n != flows*each-kept {
		t.Fatalf("%d datagrams dropped for the port's budget, want %d", n, flows*each-kept)
	}
	pt.mu.Lock()
	queued := pt.queued
	pt.mu.Unlock()
	if queued > budget {
		t.Fatalf("the port queues %d bytes, over its budget of %d", queued, budget)
	}
	close(w.release)
	waitUntil(t, "the queue is delivered", arrived, func() bool { g := guest.Load(); return g != nil && len(g.datagrams()) == kept })
	waitFor(t, "the budget is given back", func() bool {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		return pt.queued == 0
	})
}

// A connection nothing crosses for TCPIdleTimeout is closed and counted;
// one that keeps talking outlives it.
func TestAnIdleRawTCPConnectionIsClosedAndABusyOneIsNot(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	rec := &countingRecorder{changed: newBell()}
	const idle = 300 * time.Millisecond
	r := newRelay(t, Options{TCPIdleTimeout: idle, Recorder: rec})
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: g.addr, State: route.Up})

	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	quiet, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close()
	closed := make(chan time.Time, 1)
	began := time.Now()
	go func() {
		_, _ = io.Copy(io.Discard, quiet) // ends when the relay closes it
		closed <- time.Now()
	}()
	// The busy one sends a line every third of the timeout and reads the
	// echo, until the quiet one was closed.
	buf := make([]byte, 64)
	for done := false; !done; {
		select {
		case at := <-closed:
			if at.Sub(began) < idle {
				t.Fatalf("the quiet connection closed after %v, before its idle timeout of %v", at.Sub(began), idle)
			}
			done = true
		case <-time.After(idle / 3):
			busy.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := busy.Write([]byte("ping\n")); err != nil {
				t.Fatalf("the busy connection: %v", err)
			}
			if _, err := busy.Read(buf); err != nil {
				t.Fatalf("the busy connection was closed: %v", err)
			}
		}
	}
	if n := rec.limit(limitTCPIdle); n != 1 {
		t.Fatalf("%d idle timeouts counted, want 1", n)
	}
}

// Past MaxTCPConnections a connection is reset at once and counted; once
// one closes, the next is carried.
func TestRawTCPConnectionsPastTheCapAreResetAndCounted(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	rec := &countingRecorder{changed: newBell()}
	// The app's share is the whole cap here (its default, a quarter,
	// would trip first), so the host-wide cap is what ends the third.
	r := newRelay(t, Options{MaxTCPConnections: 2, MaxTCPConnectionsPerApp: 2, Recorder: rec})
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: g.addr, State: route.Up})
	var open []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		open = append(open, c)
		fmt.Fprint(c, "hello\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 16)); err != nil {
			t.Fatalf("a connection under the cap: %v", err)
		}
	}
	// The reset can arrive before the dial has read back its socket's
	// error, so the dial itself may fail with it; either way it is ended.
	third, err := net.Dial("tcp", addr)
	switch {
	case errors.Is(err, syscall.ECONNRESET):
	case err != nil:
		t.Fatal(err)
	default:
		defer third.Close()
		third.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := third.Read(make([]byte, 16)); err == nil {
			t.Fatal("the third connection was not ended")
		}
	}
	waitUntil(t, "the refusal is counted", rec.changed, func() bool { return rec.limit(limitTCPConnections) == 1 })
	open[0].Close()
	waitUntil(t, "the closed connection gives its place back", rec.changed, func() bool { all, _, _ := r.openTCP(netip.Addr{}, ""); return all == 1 })
	echoOverTCP(t, addr, "again\n")
}

// waitFor polls cond (the relay's queue has no signal of its own) for up
// to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// One client holding its cap of idle connections is reset past it on
// any app's port, while another client's connection to another app
// still echoes: with the host-wide cap alone, one client could take
// every place.
func TestOneClientHoldingItsCapOfIdleRawConnectionsLeavesAnotherClientsAppEchoing(t *testing.T) {
	game, chat := listenEcho(t, "127.0.0.1:0"), listenEcho(t, "127.0.0.1:0")
	rec := &countingRecorder{changed: newBell()}
	// The host-wide cap and each app's share have room past the
	// client's cap, so only the client's can stop it.
	r := newRelay(t, Options{MaxTCPConnections: 8, MaxTCPConnectionsPerApp: 8, MaxTCPConnectionsPerClient: 3, Recorder: rec})
	addrs := applyPorts(t, r,
		route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: game.addr, State: route.Up},
		route.Port{AppID: "chat", Index: 1, HostPort: freePort(t), Addr: chat.addr, State: route.Up})
	hog, other := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	var held []net.Conn
	for range 3 {
		c := dialFrom(t, hog, addrs[0])
		echoOn(t, c, "held\n") // carried, then left idle
		held = append(held, c)
	}
	wantReset(t, hog, addrs[0])
	wantReset(t, hog, addrs[1]) // the cap is the client's, on every app's port
	waitUntil(t, "both refusals are counted", rec.changed, func() bool { return rec.limit(limitTCPClientConnections) == 2 })

	echoOn(t, dialFrom(t, other, addrs[1]), "another client, another app\n")
	echoOn(t, held[0], "still held\n")
	if all, fromHog, _ := r.openTCP(hog, "game"); fromHog != 3 || all != 4 {
		t.Fatalf("%d connections open, %d of them from the client at its cap; want 4 and 3", all, fromHog)
	}
	if n := rec.limit(limitTCPConnections) + rec.limit(limitTCPAppConnections); n != 0 {
		t.Fatalf("%d trips of the host's or an app's cap, want none", n)
	}
}

// An app at its share of the host-wide cap, across its ports, is reset
// past it, and another app's connections are not: those open go on and
// a new one is carried. Before, one app's port could hold the whole cap
// and every other app's connections were reset.
func TestOneAppAtItsShareOfRawConnectionsDoesNotResetAnotherApps(t *testing.T) {
	game, chat := listenEcho(t, "127.0.0.1:0"), listenEcho(t, "127.0.0.1:0")
	rec := &countingRecorder{changed: newBell()}
	r := newRelay(t, Options{MaxTCPConnections: 4, MaxTCPConnectionsPerApp: 2, MaxTCPConnectionsPerClient: 16, Recorder: rec})
	addrs := applyPorts(t, r,
		route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: game.addr, State: route.Up},
		route.Port{AppID: "game", Index: 2, HostPort: freePort(t), Addr: game.addr, State: route.Up},
		route.Port{AppID: "chat", Index: 1, HostPort: freePort(t), Addr: chat.addr, State: route.Up})
	client := netip.MustParseAddr("127.0.0.1")
	before := dialFrom(t, client, addrs[2])
	echoOn(t, before, "chat before\n")
	// The game's share is taken through both of its ports.
	echoOn(t, dialFrom(t, client, addrs[0]), "game 1\n")
	echoOn(t, dialFrom(t, client, addrs[1]), "game 2\n")
	wantReset(t, client, addrs[0])
	wantReset(t, client, addrs[1])
	waitUntil(t, "both refusals are counted", rec.changed, func() bool { return rec.limit(limitTCPAppConnections) == 2 })

	echoOn(t, before, "chat still open\n")
	echoOn(t, dialFrom(t, client, addrs[2]), "chat after\n")
	if all, _, toGame := r.openTCP(client, "game"); all != 4 || toGame != 2 {
		t.Fatalf("%d connections open, %d of them to the game; want 4 and 2", all, toGame)
	}
	if n := rec.limit(limitTCPConnections) + rec.limit(limitTCPClientConnections); n != 0 {
		t.Fatalf("%d trips of the host's or a client's cap, want none", n)
	}
}

func TestARelaysPerClientCapIsTheHTTPProxysAndAnAppsShareAQuarterOfTheHosts(t *testing.T) {
	for _, tc := range []struct{ all, client, app int }{{0, 256, 1024}, {100, 256, 25}, {3, 256, 1}} {
		o := New(Options{MaxTCPConnections: tc.all}).opts
		if o.MaxTCPConnectionsPerClient != tc.client || o.MaxTCPConnectionsPerApp != tc.app {
			t.Errorf("with MaxTCPConnections %d: %d per client and %d per app, want %d and %d", tc.all, o.MaxTCPConnectionsPerClient, o.MaxTCPConnectionsPerApp, tc.client, tc.app)
		}
	}
}

// applyPorts gives r the table ports and returns their addresses, in
// order.
func applyPorts(t *testing.T, r *Relay, ports ...route.Port) []string {
	t.Helper()
	if err := r.ApplyPorts(context.Background(), ports); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, p := range ports {
		addrs = append(addrs, net.JoinHostPort("127.0.0.1", strconv.Itoa(p.HostPort)))
	}
	return addrs
}

// dialFrom connects to addr from the loopback address from (any of
// 127.0.0.0/8 is this host's), closed when the test ends.
func dialFrom(t *testing.T, from netip.Addr, addr string) net.Conn {
	t.Helper()
	c, err := fromDialer(from).Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func fromDialer(from netip.Addr) *net.Dialer {
	return &net.Dialer{Timeout: 5 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(from, 0))}
}

// echoOn sends line on c and wants it back.
func echoOn(t *testing.T, c net.Conn, line string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, line); err != nil {
		t.Fatalf("send %q: %v", line, err)
	}
	got := make([]byte, len(line))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != line {
		t.Fatalf("echo %q, %v; want %q", got, err, line)
	}
}

// wantReset wants a connection from from to addr ended unanswered. The
// reset can arrive before the dial has read back its socket's error, so
// the dial itself may fail with it.
func wantReset(t *testing.T, from netip.Addr, addr string) {
	t.Helper()
	c, err := fromDialer(from).Dial("tcp", addr)
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return
	case err != nil:
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 16)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection from %s to %s past a cap was not ended: read %d bytes, %v", from, addr, n, err)
	}
}

// One client sending from many source ports takes no more than its cap
// of a port's UDP flows: past it, a datagram that would begin another is
// dropped and counted, another client still gets a flow and its echo,
// and a flow that ends gives its place back. Before, one address could
// take every flow of a port (MaxFlows) and lock every other client out.
func TestOneClientTakesNoMoreThanItsCapOfAPortsUDPFlows(t *testing.T) {
	guest := listenEcho(t, "127.0.0.1:0")
	rec := &countingRecorder{changed: newBell()}
	r := newRelay(t, Options{MaxFlows: 8, MaxFlowsPerClient: 3, FlowIdle: 2 * time.Second, Recorder: rec})
	hp := freePort(t)
	addr := applyPort(t, r, route.Port{AppID: "dns", Index: 1, HostPort: hp, Addr: guest.addr, State: route.Up})
	hog, other := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")
	var held []net.Conn
	for i := range 3 {
		c := udpFrom(t, hog, addr)
		echoOn(t, c, fmt.Sprintf("flow %d", i))
		held = append(held, c)
	}
	udpFrom(t, hog, addr).Write([]byte("one source port too many"))
	waitUntil(t, "the dropped datagram is counted", rec.changed, func() bool { return rec.limit(limitUDPClientFlows) == 1 })

	echoOn(t, udpFrom(t, other, addr), "another client")
	echoOn(t, held[0], "still carried")
	pt := r.ports[hp]
	flowsOf := func(a netip.Addr) int {
		pt.mu.Lock()
		defer pt.mu.Unlock()
		return pt.byClient[a]
	}
	if n := flowsOf(hog); n != 3 {
		t.Fatalf("the client at its cap has %d flows, want 3", n)
	}
	if n := rec.limit(limitUDPFlows); n != 0 {
		t.Fatalf("%d trips of the port's cap, want none", n)
	}
	// Its flows end when idle, and their places come back.
	waitFor(t, "the client's idle flows end", func() bool { return flowsOf(hog) == 0 })
	echoOn(t, udpFrom(t, hog, addr), "a place again")
}

// udpFrom is a UDP socket from the loopback address from to addr,
// closed when the test ends.
func udpFrom(t *testing.T, from netip.Addr, addr string) net.Conn {
	t.Helper()
	to, err := netip.ParseAddrPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(from, 0)), net.UDPAddrFromAddrPort(to))
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
