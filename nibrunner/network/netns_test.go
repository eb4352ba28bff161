package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/slot"
	"github.com/vishvananda/netlink"
)

// topology is a host namespace with two guests behind veths named like
// taps, and an outside namespace holding an allowed address, a denied one,
// a private one and the metadata address. Every address exists only inside
// these namespaces; the root namespace is never touched.
type topology struct {
	host, g0, g1, out string
}

var topologies int

func newTopology(t *testing.T) *topology {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip", "nft")
	topologies++
	id := fmt.Sprintf("nbt%d-%d", os.Getpid()%100000, topologies)
	tp := &topology{host: id + "-h", g0: id + "-g0", g1: id + "-g1", out: id + "-o"}
	for _, ns := range []string{tp.host, tp.g0, tp.g1, tp.out} {
		testenv.Netns(t, ns)
	}
	testenv.IP(t, "-n", tp.host, "link", "add", "nbr0", "type", "veth", "peer", "name", "eth0", "netns", tp.g0)
	testenv.IP(t, "-n", tp.host, "link", "add", "nbr1", "type", "veth", "peer", "name", "eth0", "netns", tp.g1)
	testenv.IP(t, "-n", tp.host, "link", "add", "up0", "type", "veth", "peer", "name", "uplink", "netns", tp.out)
	for i, g := range []string{tp.g0, tp.g1} {
		testenv.IP(t, "-n", g, "addr", "add", GuestAddr(i).String(), "dev", "eth0")
		testenv.IP(t, "-n", g, "link", "set", "eth0", "up")
		testenv.IP(t, "-n", g, "route", "add", "default", "via", HostAddr(i).Addr().String())
	}
	testenv.IP(t, "-n", tp.host, "addr", "add", "192.0.2.1/24", "dev", "up0")
	testenv.IP(t, "-n", tp.host, "addr", "add", "2001:db8::1/64", "dev", "up0", "nodad")
	testenv.IP(t, "-n", tp.host, "link", "set", "up0", "up")
	testenv.IP(t, "-n", tp.host, "route", "add", "default", "via", "192.0.2.2")
	testenv.IP(t, "-n", tp.out, "addr", "add", "192.0.2.2/24", "dev", "uplink")
	testenv.IP(t, "-n", tp.out, "addr", "add", "2001:db8::2/64", "dev", "uplink", "nodad")
	testenv.IP(t, "-n", tp.out, "link", "set", "uplink", "up")
	for _, a := range []string{"198.51.100.7/32", "172.16.5.5/32", "169.254.169.254/32"} {
		testenv.IP(t, "-n", tp.out, "addr", "add", a, "dev", "lo")
	}
	// Outside knows the way to the guests' subnet, so that a direct
	// attempt is refused by the rules, not by a missing route.
	testenv.IP(t, "-n", tp.out, "route", "add", slot.Subnet.String(), "via", "192.0.2.1")
	err := testenv.InNetns(tp.host, func() error {
		if err := SetSysctls(HostSysctls); err != nil {
			return err
		}
		if wrong := CheckSysctls(HostSysctls); len(wrong) > 0 {
			return errors.New(strings.Join(wrong, "; "))
		}
		for i := 0; i < 2; i++ {
			if err := ConfigureLink(i, slot.Tap(i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func (tp *topology) apply(t *testing.T, webRunning bool) {
	t.Helper()
	r := Rules{
		Apps: []App{
			{Slot: 0, AppID: "web", Running: webRunning, HTTPPort: 8080, Ports: []int{5000}},
			{Slot: 1, AppID: "api", Running: true, HTTPPort: 8080},
		},
		DeniedV4: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")},
		DNS:      []netip.Addr{netip.MustParseAddr("172.16.5.5")},
	}
	if err := testenv.InNetns(tp.host, func() error { return Firewall{}.Apply(context.Background(), r) }); err != nil {
		t.Fatal(err)
	}
}

// mustReach wants what the server at addr says to ns.
func mustReach(t *testing.T, ns, addr, want string) {
	t.Helper()
	got, _, err := testenv.DialTCP(ns, addr, "")
	if err != nil || got != want {
		t.Fatalf("from %s to %s: got %q, %v; want %q", ns, addr, got, err, want)
	}
}

func TestGuestsAreFencedInAndPublishedOnlyWhileRunning(t *testing.T) {
	tp := newTopology(t)
	tp.apply(t, false)
	testenv.ServeTCP(t, tp.host, "0.0.0.0:9999", "host")
	testenv.ServeTCP(t, tp.g0, "0.0.0.0:8080", "web")
	testenv.ServeTCP(t, tp.g0, "0.0.0.0:5000", "web-raw")
	testenv.ServeUDP(t, tp.g0, "0.0.0.0:5000", "web-udp")
	testenv.ServeTCP(t, tp.g1, "0.0.0.0:8080", "api")
	testenv.ServeTCP(t, tp.out, "0.0.0.0:80", "outside")
	testenv.ServeTCP(t, tp.out, "0.0.0.0:53", "dns-tcp")
	// Bound to the address, so its answers leave from it (a resolver does).
	testenv.ServeUDP(t, tp.out, "172.16.5.5:53", "dns-udp")

	t.Run("AGuestReachesAnAllowedOutsideAddressAsTheHost", func(t *testing.T) {
		mustReach(t, tp.g0, "192.0.2.2:80", "outside from 192.0.2.1")
	})
	t.Run("AGuestCannotReachTheHost", func(t *testing.T) {
		mustReach(t, tp.out, "192.0.2.1:9999", "host from 192.0.2.2") // the host does answer others
		testenv.MustBeRefused(t, tp.g0, "10.201.0.1:9999")
		testenv.MustBeRefused(t, tp.g0, "192.0.2.1:9999")
		testenv.MustBeRefused(t, tp.g0, "10.201.0.5:9999")
	})
	t.Run("AGuestCannotReachAnotherGuest", func(t *testing.T) {
		mustReach(t, tp.host, "10.201.0.6:8080", "api from 10.201.0.5") // the host can
		testenv.MustBeRefused(t, tp.g0, "10.201.0.6:8080")
		testenv.MustBeRefused(t, tp.g1, "10.201.0.2:8080")
	})
	t.Run("AGuestCannotReachAPrivateRangeTheMetadataAddressOrADeniedCIDR", func(t *testing.T) {
		for _, addr := range []string{"172.16.5.5:80", "169.254.169.254:80", "198.51.100.7:80"} {
			mustReach(t, tp.host, addr, "outside from 192.0.2.1") // routable: the rules, not routing, refuse
			testenv.MustBeRefused(t, tp.g0, addr)
		}
	})
	t.Run("AGuestReachesItsNameServerOnPort53Only", func(t *testing.T) {
		mustReach(t, tp.g0, "172.16.5.5:53", "dns-tcp from 192.0.2.1")
		if got, err := testenv.ExchangeUDP(tp.g0, "172.16.5.5:53"); err != nil || got != "dns-udp from 192.0.2.1" {
			t.Fatalf("udp to the name server: %q, %v", got, err)
		}
		testenv.MustBeRefused(t, tp.g0, "172.16.5.5:80")
	})
	t.Run("NothingOutsideReachesAGuestDirectly", func(t *testing.T) {
		testenv.MustBeRefused(t, tp.out, "10.201.0.2:8080")
	})
	t.Run("AStoppedAppsHostPortDoesNotReachItsGuest", func(t *testing.T) {
		testenv.MustBeRefused(t, tp.host, "127.0.0.1:21000")
		mustReach(t, tp.host, "127.0.0.1:21008", "api from 10.201.0.5")
	})
	t.Run("ARunningAppsHostPortReachesItsGuestFromTheHostsLoopbackOnly", func(t *testing.T) {
		tp.apply(t, true)
		mustReach(t, tp.host, "127.0.0.1:21000", "web from 10.201.0.1")
		// From another namespace, on any of the host's addresses, over
		// either family: nothing. The host's own other address neither.
		for _, addr := range []string{"192.0.2.1:21000", "[2001:db8::1]:21000", "192.0.2.1:21008", "10.201.0.1:21000"} {
			testenv.MustBeRefused(t, tp.out, addr)
		}
		testenv.MustBeRefused(t, tp.host, "192.0.2.1:21000")
		// A guest cannot reach another's host port through the host.
		testenv.MustBeRefused(t, tp.g1, "10.201.0.5:21000")
		for _, addr := range []string{"192.0.2.1:21000", "192.0.2.1:21001", "[2001:db8::1]:21001"} {
			if got, err := testenv.ExchangeUDP(tp.out, addr); err == nil {
				t.Fatalf("udp from outside to %s reached %q", addr, got)
			}
		}
		// A raw port is the relay's to listen on (none here): no DNAT
		// carries it past the relay. The relay reaches the guest itself.
		testenv.MustBeRefused(t, tp.out, "192.0.2.1:21001")
		mustReach(t, tp.host, "10.201.0.2:5000", "web-raw from 10.201.0.1")
		if got, err := testenv.ExchangeUDP(tp.host, "10.201.0.2:5000"); err != nil || got != "web-udp from 10.201.0.1" {
			t.Fatalf("udp from the host to the guest's raw port: %q, %v", got, err)
		}
	})
	t.Run("StoppingTheAppUnpublishesItAgain", func(t *testing.T) {
		tp.apply(t, false)
		testenv.MustBeRefused(t, tp.host, "127.0.0.1:21000")
	})
}

func TestATapIsMadeWithTheSlotsHostAddressAndRemoved(t *testing.T) {
	tp := newTopology(t)
	err := testenv.InNetns(tp.host, func() error {
		for i := 0; i < 2; i++ { // twice: idempotent
			if err := EnsureTap(7); err != nil {
				return err
			}
		}
		link, err := netlink.LinkByName("nbr7")
		if err != nil {
			return err
		}
		if link.Type() != "tuntap" || link.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("nbr7 is a %s with flags %v; want an up tap", link.Type(), link.Attrs().Flags)
		}
		if slots, err := Taps(); err != nil || len(slots) != 1 || slots[0] != 7 {
			return fmt.Errorf("Taps = %v, %v; want [7] (the veths are not taps)", slots, err)
		}
		addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		if len(addrs) != 1 || addrs[0].IPNet.String() != "10.201.0.29/30" {
			return fmt.Errorf("nbr7 has addresses %v; want 10.201.0.29/30", addrs)
		}
		if err := RemoveTap(7); err != nil {
			return err
		}
		if _, err := netlink.LinkByName("nbr7"); err == nil {
			return errors.New("nbr7 still exists after RemoveTap")
		}
		return RemoveTap(7)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestABrokenRulesetIsRefusedWholeAndTheLastOneStays(t *testing.T) {
	tp := newTopology(t)
	testenv.ServeTCP(t, tp.g1, "0.0.0.0:8080", "api")
	tp.apply(t, true)
	err := testenv.InNetns(tp.host, func() error {
		fw := Firewall{}
		if err := fw.Load(context.Background(), "table inet nibrun\ndelete table inet nibrun\ntable inet nibrun {\n\tchain x {\n\t\tnot a rule\n\t}\n}\n"); err == nil {
			return errors.New("a broken ruleset loaded")
		}
		ok, err := fw.Installed(context.Background())
		if err != nil || !ok {
			return fmt.Errorf("after a refused load the table is gone: %v %v", ok, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mustReach(t, tp.host, "127.0.0.1:21008", "api from 10.201.0.5") // the previous rules still publish
	if err := testenv.InNetns(tp.host, func() error {
		if err := (Firewall{}).Remove(context.Background()); err != nil {
			return err
		}
		if ok, _ := (Firewall{}).Installed(context.Background()); ok {
			return errors.New("the table is still there after Remove")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestTheHostMakesATapPerSlotAppliesTheTableAndRemovesStaleTaps(t *testing.T) {
	tp := newTopology(t)
	h := Host{DeniedV4: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}
	err := testenv.InNetns(tp.host, func() error {
		apps := []App{{Slot: 3, AppID: "a", Running: true, HTTPPort: 80}, {Slot: 4, AppID: "b", HTTPPort: 80}}
		if err := h.Apply(context.Background(), apps); err != nil {
			return err
		}
		if slots, _ := Taps(); fmt.Sprint(slots) != "[3 4]" {
			return fmt.Errorf("taps after the first apply: %v", slots)
		}
		if ok, err := h.Firewall.Installed(context.Background()); !ok || err != nil {
			return fmt.Errorf("table installed: %v %v", ok, err)
		}
		if err := h.Apply(context.Background(), apps[:1]); err != nil {
			return err
		}
		if slots, _ := Taps(); fmt.Sprint(slots) != "[3]" {
			return fmt.Errorf("taps after b was forgotten: %v", slots)
		}
		if err := SetSysctls([]Sysctl{{Key: "net.ipv4.ip_forward", Value: "0"}}); err != nil {
			return err
		}
		if err := h.Apply(context.Background(), apps); err == nil || !strings.Contains(err.Error(), "net.ipv4.ip_forward is 0; it must be 1") {
			return fmt.Errorf("apply without forwarding: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A guest with root can send from any address it likes. Two forged
// sources — one of nobody's, one of another guest's — must not leave the
// host's uplink; a datagram from the guest's own address, sent after them,
// must (it arriving is the signal that the forged ones had their chance).
func TestAGuestsForgedSourceNeverLeavesTheUplink(t *testing.T) {
	tp := newTopology(t)
	tp.apply(t, true)
	forged := []string{"203.0.113.9", GuestAddr(1).Addr().String()}
	for _, a := range forged {
		testenv.IP(t, "-n", tp.g0, "addr", "add", a+"/32", "dev", "lo")
	}
	var pc net.PacketConn
	if err := testenv.InNetns(tp.out, func() (err error) { pc, err = net.ListenPacket("udp", "192.0.2.2:7000"); return err }); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	type datagram struct{ from, text string }
	got := make(chan datagram, 64)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				close(got)
				return
			}
			host, _, _ := net.SplitHostPort(from.String())
			got <- datagram{host, string(buf[:n])}
		}
	}()
	send := func(src, text string) error {
		return testenv.InNetns(tp.g0, func() error {
			var laddr *net.UDPAddr
			if src != "" {
				laddr = &net.UDPAddr{IP: net.ParseIP(src)}
			}
			c, err := net.DialUDP("udp", laddr, &net.UDPAddr{IP: net.ParseIP("192.0.2.2"), Port: 7000})
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte(text))
			return err
		})
	}
	for _, a := range forged {
		if err := send(a, "forged "+a); err != nil {
			t.Fatalf("send from %s: %v", a, err)
		}
	}
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	if err := send("", "own"); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case d := <-got:
			if strings.HasPrefix(d.text, "forged") {
				t.Fatalf("%q left the uplink, seen from %s", d.text, d.from)
			}
			if d.text == "own" {
				if d.from != "192.0.2.1" {
					t.Errorf("the guest's own datagram arrived from %s, want the host's 192.0.2.1", d.from)
				}
				return
			}
		case <-tick.C:
			if err := send("", "own"); err != nil {
				t.Fatal(err)
			}
		case <-deadline:
			t.Fatal("the guest's datagram from its own address never arrived")
		}
	}
}
