package raw

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// A relay listening on a wildcard address ([proxy.raw] listen_address =
// "0.0.0.0" or "::") learns from each flow's first datagram which address
// the client sent it to, and refuses from there: the client's connected
// socket reads "connection refused" once the app's wake has failed.

func TestOnTheIPv4WildcardAFlowWhoseWakeFailsIsRefusedToItsClientOnLoopback(t *testing.T) {
	refusedThrough(t, "0.0.0.0", "127.0.0.1")
}

func TestOnTheIPv6WildcardAnIPv4FlowWhoseWakeFailsIsRefused(t *testing.T) {
	requireIPv6Loopback(t)
	refusedThrough(t, "::", "127.0.0.1")
}

func TestOnTheIPv6WildcardAnIPv6FlowWhoseWakeFailsIsRefused(t *testing.T) {
	requireIPv6Loopback(t)
	refusedThrough(t, "::", "::1")
}

func TestOnALoopbackAddressAFlowWhoseWakeFailsIsStillRefused(t *testing.T) {
	refusedThrough(t, "127.0.0.1", "127.0.0.1")
}

func TestWithoutTheAddressItWasSentToNoRefusalIsSentAndTheErrorSaysWhy(t *testing.T) {
	err := sendPortUnreachable(netip.MustParseAddrPort("127.0.0.1:40000"), netip.MustParseAddrPort("0.0.0.0:5353"), []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "IP_PKTINFO") {
		t.Fatalf("a refusal quoting the wildcard address: %v, want an error naming IP_PKTINFO", err)
	}
}

// refusedThrough runs a relay on listen whose app's wake fails and sends
// one datagram to it from a connected socket on client.
func refusedThrough(t *testing.T, listen, client string) {
	t.Helper()
	testenv.RequireRoot(t) // a raw ICMP socket needs CAP_NET_RAW
	w := &gatedWaker{release: make(chan struct{}), err: errors.New("out of memory")}
	close(w.release)
	var logged syncLines
	r := New(Options{ListenAddress: listen, Logf: logged.Logf})
	t.Cleanup(r.Close)
	r.SetWaker(w)
	// freePort finds a port free on loopback; on the wildcard another
	// test's outgoing connection may hold it meanwhile (the ephemeral
	// range is the one :0 picks from), so a port taken is tried again.
	var hp int
	for try := 0; ; try++ {
		hp = freePort(t)
		err := r.ApplyPorts(t.Context(), []route.Port{{AppID: "game", Index: 1, HostPort: hp, Addr: "127.0.0.1:1", State: route.Sleeping}})
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == 9 {
			t.Fatal(err)
		}
	}
	c, err := net.Dial("udp", net.JoinHostPort(client, strconv.Itoa(hp)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("anyone?")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 10)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a datagram from %v to a relay on %s whose app's wake failed: the client read %v, want connection refused; the relay logged %q", c.LocalAddr(), listen, err, logged.String())
	}
}

// requireIPv6Loopback skips t when this host has no ::1. Where the
// kernel has IPv6 and loopback does not disable it, ::1 should be there,
// so the integration lane fails instead.
func requireIPv6Loopback(t *testing.T) {
	t.Helper()
	l, err := net.ListenPacket("udp6", "[::1]:0")
	if err == nil {
		l.Close()
		return
	}
	disabled, rerr := os.ReadFile("/proc/sys/net/ipv6/conf/lo/disable_ipv6")
	if rerr != nil || strings.TrimSpace(string(disabled)) == "1" {
		t.Skipf("skipped: this host has no IPv6 loopback (binding [::1] failed: %v)", err)
	}
	testenv.Missing(t, "IPv6 is enabled on lo, yet binding [::1] failed: "+err.Error())
}

// BenchmarkRawUDPRoundTrip sends one datagram through the relay on
// listen to a guest that echoes it and waits for the answer, from one
// flow: what reading each datagram's destination adds to the hot path
// (the control messages are read for a flow's first datagram only).
func BenchmarkRawUDPRoundTrip(b *testing.B) {
	guest, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer guest.Close()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := guest.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = guest.WriteTo(buf[:n], from)
		}
	}()
	for _, listen := range []string{"127.0.0.1", "0.0.0.0"} {
		b.Run("listen="+listen, func(b *testing.B) {
			r := New(Options{ListenAddress: listen, Logf: b.Logf})
			defer r.Close()
			hp := freePort(b)
			if err := r.ApplyPorts(b.Context(), []route.Port{{AppID: "bench", Index: 1, HostPort: hp, Addr: guest.LocalAddr().String(), State: route.Up}}); err != nil {
				b.Fatal(err)
			}
			c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(hp)))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(time.Minute))
			msg, buf := make([]byte, 512), make([]byte, 1500)
			b.SetBytes(int64(len(msg)))
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Read(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
