package raw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// echoGuest is a guest port on loopback that echoes TCP lines and UDP
// datagrams, and remembers the datagrams in the order they came.
type echoGuest struct {
	addr string
	mu   sync.Mutex
	got  []string
	// arrived rings after each datagram is remembered.
	arrived bell
}

func (g *echoGuest) datagrams() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.got...)
}

// listenEcho starts an echo guest on addr ("127.0.0.1:0" for any port).
func listenEcho(t *testing.T, addr string) *echoGuest {
	t.Helper()
	return listenEchoRinging(t, addr, newBell())
}

// listenEchoRinging is listenEcho whose guest rings arrived.
func listenEchoRinging(t *testing.T, addr string, arrived bell) *echoGuest {
	t.Helper()
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ul, err := net.ListenPacket("udp", tl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tl.Close(); ul.Close() })
	g := &echoGuest{addr: tl.Addr().String(), arrived: arrived}
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	go func() {
		buf := make([]byte, 65536)
		for {
			n, from, err := ul.ReadFrom(buf)
			if err != nil {
				return
			}
			g.mu.Lock()
			g.got = append(g.got, string(buf[:n]))
			g.mu.Unlock()
			g.arrived.ring()
			ul.WriteTo(buf[:n], from)
		}
	}()
	return g
}

// freePort is a loopback port free for TCP and UDP alike.
func freePort(t testing.TB) int {
	t.Helper()
	for range 20 {
		tl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := tl.Addr().(*net.TCPAddr).Port
		ul, err := net.ListenPacket("udp", tl.Addr().String())
		tl.Close()
		if err == nil {
			ul.Close()
			return port
		}
	}
	t.Fatal("no port free for tcp and udp")
	return 0
}

// gatedWaker wakes once release is closed; onWake runs first (to start
// the guest, say). asked, when set, rings on each call.
type gatedWaker struct {
	calls   atomic.Int64
	asked   bell
	release chan struct{}
	onWake  func()
	err     error
}

func (w *gatedWaker) Wake(ctx context.Context, app string) error {
	w.calls.Add(1)
	w.asked.ring()
	select {
	case <-w.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if w.onWake != nil {
		w.onWake()
	}
	return w.err
}

func newRelay(t *testing.T, o Options) *Relay {
	t.Helper()
	o.ListenAddress = "127.0.0.1"
	o.Logf = t.Logf
	r := New(o)
	t.Cleanup(r.Close)
	return r
}

func applyPort(t *testing.T, r *Relay, p route.Port) string {
	t.Helper()
	if err := r.ApplyPorts(context.Background(), []route.Port{p}); err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.HostPort))
}

func echoOverTCP(t *testing.T, addr, line string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprint(c, line)
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != line {
		t.Fatalf("tcp echo %q, %v; want %q", got, err, line)
	}
}

func echoOverUDP(t *testing.T, addr, msg string) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Long enough for a wake under software emulation on a loaded machine.
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	c.Write([]byte(msg))
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != msg {
		t.Fatalf("udp echo %q, %v; want %q", buf[:n], err, msg)
	}
}

func TestTCPAndUDPAreCarriedToTheGuestPort(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	r := newRelay(t, Options{})
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: g.addr, State: route.Up})
	echoOverTCP(t, addr, "hello over tcp\n")
	echoOverUDP(t, addr, "hello over udp")
}

func TestTheFirstTCPConnectionWakesASleepingAppAndIsHeldUntilItAnswers(t *testing.T) {
	guestAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	// The guest listens only once the wake has brought it up.
	w := &gatedWaker{release: make(chan struct{}), asked: newBell()}
	w.onWake = func() { listenEcho(t, guestAddr) }
	r := newRelay(t, Options{})
	r.SetWaker(w)
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: guestAddr, State: route.Sleeping})

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "sent while it slept\n")
	waitUntil(t, "the connection wakes the app", w.asked, func() bool { return w.calls.Load() == 1 })
	if _, busy := r.Activity("game"); !busy {
		t.Fatal("a connection held for a wake does not keep its app busy")
	}
	close(w.release)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || got != "sent while it slept\n" {
		t.Fatalf("after the wake the connection read %q, %v", got, err)
	}
	// Woken: the next connection goes straight through, with no new wake.
	echoOverTCP(t, addr, "again\n")
	if n := w.calls.Load(); n != 1 {
		t.Fatalf("%d wakes, want 1", n)
	}
}

func TestAUDPBurstDuringAWakeIsDeliveredInOrderUpToTheBound(t *testing.T) {
	guestAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	var guest atomic.Pointer[echoGuest]
	w := &gatedWaker{release: make(chan struct{}), asked: newBell()}
	arrived := newBell()
	w.onWake = func() { guest.Store(listenEchoRinging(t, guestAddr, arrived)) }
	dropped := &countingRecorder{changed: newBell()}
	r := newRelay(t, Options{QueueDatagrams: 10, QueueBytes: 1 << 20, Recorder: dropped})
	r.SetWaker(w)
	addr := applyPort(t, r, route.Port{AppID: "dns", Index: 1, HostPort: freePort(t), Addr: guestAddr, State: route.Sleeping})

	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 15 {
		fmt.Fprintf(c, "datagram %02d", i)
	}
	waitUntil(t, "the burst wakes the app once", w.asked, func() bool { return w.calls.Load() == 1 })
	waitUntil(t, "the datagrams past the bound are dropped", dropped.changed, func() bool { return dropped.dropped.Load() == 5 })
	close(w.release)
	waitUntil(t, "the queue is delivered", arrived, func() bool { g := guest.Load(); return g != nil && len(g.datagrams()) == 10 })
	g := guest.Load()
	for i, d := range g.datagrams() {
		if want := fmt.Sprintf("datagram %02d", i); d != want {
			t.Fatalf("the guest got %q as datagram %d, want %q (in order): %q", d, i, want, g.datagrams())
		}
	}
	// And the answers come back to the client, from the port's address.
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 100)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "datagram 00" {
		t.Fatalf("the first answer %q, %v", buf[:n], err)
	}
}

func TestAStoppedAppsPortRefusesTCPWithAResetAndUDPWithPortUnreachable(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	r := newRelay(t, Options{})
	hp := freePort(t)
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: hp, Addr: g.addr, State: route.Up})
	echoOverTCP(t, addr, "up\n")
	applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: hp, Addr: g.addr, State: route.Down})

	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a TCP connect to a stopped app's port: %v, want connection refused", err)
	}
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("anyone?"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a UDP datagram to a stopped app's port: %v, want port unreachable (connection refused)", err)
	}
}

func TestAWakeThatFailsResetsTheHeldConnection(t *testing.T) {
	w := &gatedWaker{release: make(chan struct{}), err: errors.New("out of memory")}
	close(w.release)
	r := newRelay(t, Options{})
	r.SetWaker(w)
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: "127.0.0.1:1", State: route.Sleeping})
	c, err := net.Dial("tcp", addr)
	if err == nil {
		// The reset may come before the client's connect returns, or after.
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = c.Read(make([]byte, 1))
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("%v, want a reset", err)
	}
}

func TestAUDPFlowWhoseWakeFailsIsRefusedWithPortUnreachableCountedAndLogged(t *testing.T) {
	testenv.RequireRoot(t) // a raw ICMP socket needs CAP_NET_RAW
	w := &gatedWaker{release: make(chan struct{}), err: errors.New("out of memory")}
	close(w.release)
	rec := &countingRecorder{changed: newBell()}
	var logged syncLines
	r := New(Options{ListenAddress: "127.0.0.1", Logf: logged.Logf, Recorder: rec})
	t.Cleanup(r.Close)
	r.SetWaker(w)
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: "127.0.0.1:1", State: route.Sleeping})
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("anyone?"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a datagram to an app whose wake failed: %v, want port unreachable (connection refused)", err)
	}
	waitUntil(t, "the flow is counted as refused", rec.changed, func() bool { return rec.refusedUDP.Load() == 1 })
	if l := logged.String(); !strings.Contains(l, "app game udp port") || !strings.Contains(l, "out of memory") || !strings.Contains(l, "refused with port unreachable") {
		t.Fatalf("the log says %q", l)
	}
}

func TestAPortUnreachableQuotesTheRefusedDatagramsHeaders(t *testing.T) {
	client, local := netip.MustParseAddrPort("10.0.0.7:40000"), netip.MustParseAddrPort("192.0.2.1:5353")
	m := portUnreachable(client, local, []byte("hello"))
	if m[0] != 3 || m[1] != 3 || checksum(m) != 0 {
		t.Fatalf("ICMP type %d code %d, checksum over the message %#x (want 3, 3, 0)", m[0], m[1], checksum(m))
	}
	ip, udp := m[8:28], m[28:36]
	if ip[9] != syscall.IPPROTO_UDP || !bytes.Equal(ip[12:16], []byte{10, 0, 0, 7}) || !bytes.Equal(ip[16:20], []byte{192, 0, 2, 1}) || checksum(ip) != 0 {
		t.Fatalf("the quoted IP header %x", ip)
	}
	if binary.BigEndian.Uint16(udp[0:]) != 40000 || binary.BigEndian.Uint16(udp[2:]) != 5353 || binary.BigEndian.Uint16(udp[4:]) != 13 || string(m[36:]) != "hello" {
		t.Fatalf("the quoted UDP header and payload %x %q", udp, m[36:])
	}
	m6 := portUnreachable(netip.MustParseAddrPort("[2001:db8::7]:40000"), netip.MustParseAddrPort("[2001:db8::1]:5353"), make([]byte, 100))
	if m6[0] != 1 || m6[1] != 4 || m6[8+6] != syscall.IPPROTO_UDP || len(m6) != 8+40+8+quotedPayload {
		t.Fatalf("ICMPv6 type %d code %d, next header %d, %d bytes", m6[0], m6[1], m6[8+6], len(m6))
	}
}

func TestRawBytesInAndOpenConnectionsAreTheAppsTraffic(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	opened := make(openings, 2)
	r := newRelay(t, Options{Now: new(tickingClock).Now, Recorder: opened})
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: g.addr, State: route.Up})
	if last, busy := r.Activity("game"); !last.IsZero() || busy {
		t.Fatalf("traffic before any: %v %v", last, busy)
	}
	echoOverUDP(t, addr, "ping")
	datagram, busy := r.Activity("game")
	if datagram.IsZero() || busy {
		t.Fatalf("after a datagram in: last traffic %v, busy %v; want a time and not busy", datagram, busy)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if d := <-opened; d != 1 {
		t.Fatalf("the relay reported %+d open connections first, want +1", d)
	}
	if last, busy := r.Activity("game"); !busy || !last.After(datagram) {
		t.Fatalf("with a connection open: last traffic %v (the datagram's %v), busy %v; want later and busy", last, datagram, busy)
	}
	c.Close()
	if d := <-opened; d != -1 {
		t.Fatalf("the relay reported %+d open connections after the close, want -1", d)
	}
	// The connection's goroutine ends its meter last; Close waits for it.
	r.Close()
	if _, busy := r.Activity("game"); busy {
		t.Fatal("the closed connection still keeps its app busy")
	}
}

func TestClosingTheRelayLeavesNoGoroutineBehind(t *testing.T) {
	g := listenEcho(t, "127.0.0.1:0")
	r := New(Options{ListenAddress: "127.0.0.1", Logf: t.Logf})
	addr := applyPort(t, r, route.Port{AppID: "game", Index: 1, HostPort: freePort(t), Addr: g.addr, State: route.Up})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echoOverUDP(t, addr, "flow")
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end an open connection and a flow")
	}
}

// countingRecorder counts dropped datagrams and refused UDP flows, and
// rings changed (when set) after each count.
type countingRecorder struct {
	dropped, refusedUDP atomic.Int64
	changed             bell
	mu                  sync.Mutex
	limits              map[string]int
}

func (c *countingRecorder) RawLimit(limit string, n int) {
	c.mu.Lock()
	if c.limits == nil {
		c.limits = map[string]int{}
	}
	c.limits[limit] += n
	c.mu.Unlock()
	c.changed.ring()
}

func (c *countingRecorder) limit(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limits[name]
}

func (c *countingRecorder) RawConnection(app, proto, outcome string, in, out int64) {
	if proto == "udp" && outcome == "refused" {
		c.refusedUDP.Add(1)
		c.changed.ring()
	}
}
func (c *countingRecorder) RawOpen(app, proto string, delta int) { c.changed.ring() }
func (c *countingRecorder) RawDropped(app string, n int) {
	c.dropped.Add(int64(n))
	c.changed.ring()
}
func (c *countingRecorder) WakeWaited(via string, d time.Duration, err error) {}

// syncLines gathers log lines from any goroutine.
type syncLines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLines) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format+"\n", args...)
}

func (l *syncLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// bell is a signal that something changed: ring never blocks and keeps
// one ring for a waiter that is not listening yet; a nil bell rings
// nobody.
type bell chan struct{}

func newBell() bell { return make(bell, 1) }

func (b bell) ring() {
	select {
	case b <- struct{}{}:
	default:
	}
}

// waitUntil checks cond after each ring of b, for up to 10 s in all.
func waitUntil(t *testing.T, what string, b bell, cond func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for !cond() {
		select {
		case <-b:
		case <-timeout:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// openings is a Recorder that hands on each TCP connection's opening
// (+1) and closing (-1) as the relay reports it.
type openings chan int

func (o openings) RawConnection(app, proto, outcome string, in, out int64) {}
func (o openings) RawOpen(app, proto string, delta int) {
	if proto == "tcp" {
		o <- delta
	}
}
func (o openings) RawDropped(app string, n int)                      {}
func (o openings) RawLimit(limit string, n int)                      {}
func (o openings) WakeWaited(via string, d time.Duration, err error) {}

// tickingClock moves one millisecond on each reading, so each mark of
// traffic is later than the one before.
type tickingClock struct{ n atomic.Int64 }

func (c *tickingClock) Now() time.Time {
	return time.Unix(1_800_000_000, 0).Add(time.Duration(c.n.Add(1)) * time.Millisecond)
}
