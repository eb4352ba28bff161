package raw

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// A relay on a wildcard address answers each UDP flow from the address its
// client sent to. On a host with two addresses on one interface the route
// back to the client prefers one of them; an answer to a datagram sent to
// the other, left to routing, leaves from the preferred one, and the
// client's connected socket drops it.

func TestOnTheIPv4WildcardAnswersLeaveFromTheAddressTheClientSentTo(t *testing.T) {
	h := multiHomed(t)
	answeredFrom(t, h, "0.0.0.0", "10.77.0.1", "10.77.0.2")
}

func TestOnTheIPv6WildcardAnIPv4ClientIsAnsweredFromTheAddressItSentTo(t *testing.T) {
	h := multiHomed(t)
	answeredFrom(t, h, "::", "10.77.0.1", "10.77.0.2")
}

func TestOnTheIPv6WildcardAnswersLeaveFromTheAddressTheClientSentTo(t *testing.T) {
	h := multiHomed(t)
	answeredFrom(t, h, "::", "fd77::1", "fd77::2")
}

func TestOnTheIPv6WildcardALinkLocalClientIsAnsweredFromTheLinkLocalAddressItSentTo(t *testing.T) {
	h := multiHomed(t)
	answeredFrom(t, h, "::", "fe80::1%c0", "fe80::2%c0")
}

// host is two network namespaces joined by a veth pair: the relay's, whose
// end (h0) has two addresses of each kind (10.77.0.1 and .2, fd77::1 and
// ::2, fe80::1 and ::2), and the client's (c0: 10.77.0.9, fd77::9,
// fe80::9).
type host struct{ relay, client string }

var netnsSeq atomic.Int64

func multiHomed(t *testing.T) host {
	t.Helper()
	n := netnsSeq.Add(1)
	h := host{
		relay:  testenv.Netns(t, fmt.Sprintf("nibraw-r%d-%d", os.Getpid(), n)),
		client: testenv.Netns(t, fmt.Sprintf("nibraw-c%d-%d", os.Getpid(), n)),
	}
	testenv.IP(t, "-n", h.relay, "link", "add", "h0", "type", "veth", "peer", "name", "c0", "netns", h.client)
	for ns, addrs := range map[string][]string{
		h.relay:  {"10.77.0.1/24", "10.77.0.2/24", "fd77::1/64", "fd77::2/64", "fe80::1/64", "fe80::2/64"},
		h.client: {"10.77.0.9/24", "fd77::9/64", "fe80::9/64"},
	} {
		dev := "h0"
		if ns == h.client {
			dev = "c0"
		}
		// Only the link-local addresses given, so which of them is the
		// one routing prefers is up to the kernel, not to a generated one.
		testenv.IP(t, "-n", ns, "link", "set", dev, "addrgenmode", "none")
		for _, a := range addrs {
			args := []string{"-n", ns, "addr", "add", a, "dev", dev}
			if netip.MustParsePrefix(a).Addr().Is6() {
				args = append(args, "nodad") // usable at once, not tentative
			}
			testenv.IP(t, args...)
		}
		testenv.IP(t, "-n", ns, "link", "set", dev, "up")
	}
	return h
}

// answeredFrom runs a relay in h's relay namespace on listen, and from the
// client's namespace sends one datagram to each of first and second (one
// client socket each: a socket is one flow, answered from the address its
// first datagram went to). Each answer must come from the address and port
// its datagram was sent to.
func answeredFrom(t *testing.T, h host, listen string, first, second string) {
	t.Helper()
	guest := listenEcho(t, "127.0.0.1:0") // in the test's own namespace
	r := New(Options{ListenAddress: listen, Logf: t.Logf})
	t.Cleanup(r.Close)
	hp := freePort(t)
	err := testenv.InNetns(h.relay, func() error {
		return r.ApplyPorts(t.Context(), []route.Port{{AppID: "game", Index: 1, HostPort: hp, Addr: guest.addr, State: route.Up}})
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{first, second} {
		dst := netip.AddrPortFrom(netip.MustParseAddr(to), uint16(hp))
		var from netip.AddrPort
		var got string
		err := testenv.InNetns(h.client, func() error {
			// Not connected, so an answer from any address is read, and
			// its source seen.
			c, err := net.ListenUDP("udp", nil)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.WriteToUDPAddrPort([]byte("hello "+to), dst); err != nil {
				return fmt.Errorf("send to %v: %w", dst, err)
			}
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // lost, on a loaded machine at worst
			buf := make([]byte, 1500)
			n, f, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return fmt.Errorf("no answer to a datagram sent to %v: %w", dst, err)
			}
			from, got = f, string(buf[:n])
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got != "hello "+to {
			t.Fatalf("the answer to a datagram sent to %v is %q, want the guest's echo", dst, got)
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		if from != dst {
			t.Fatalf("a relay on %s answered a datagram sent to %v from %v; the client drops an answer from anywhere but where it sent", listen, dst, from)
		}
	}
}
