// Command spoofer is a guest's PID 1 for the spoofing test: root in its
// own guest kernel, as a tenant that broke the init's boundary would be.
// It configures eth0 as the init does (from nibrun.ip and nibrun.gw on
// the kernel's command line), then sends UDP datagrams to the uplink's
// far side for ever: "own" from its own address, and "forged" from an
// address that is not its (its lo holds it, as a root tenant may add).
package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

// Forged is the source the spoofer forges; Target is where it sends.
const (
	Forged = "198.51.100.7"
	Target = "192.0.2.2:7000"
)

func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, "spoofer: "+format+"\n", args...)
}

func main() {
	forged, dst, err := setup()
	if err != nil {
		say("%v", err)
		for {
			time.Sleep(time.Hour) // PID 1 never ends
		}
	}
	for n := 0; ; n++ {
		if own, err := net.DialUDP("udp4", nil, dst); err == nil {
			_, err = own.Write([]byte("own"))
			own.Close()
			if err != nil && n%20 == 0 {
				say("send own: %v", err)
			}
		}
		if err := unix.Sendto(forged, []byte("forged"), 0, &unix.SockaddrInet4{Port: dst.Port, Addr: [4]byte(dst.IP.To4())}); err != nil && n%20 == 0 {
			say("send forged: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// setup configures eth0 and returns the socket bound to the forged
// address and where to send.
func setup() (int, *net.UDPAddr, error) {
	if err := unix.Mount("proc", "/proc", "proc", 0, ""); err != nil {
		return -1, nil, fmt.Errorf("mount /proc: %w", err)
	}
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return -1, nil, err
	}
	var ip, gw string
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, guest.ParamIP+"="); ok {
			ip = v
		}
		if v, ok := strings.CutPrefix(f, guest.ParamGateway+"="); ok {
			gw = v
		}
	}
	link, err := netlink.LinkByName("eth0")
	if err != nil {
		return -1, nil, fmt.Errorf("eth0: %w", err)
	}
	addr, err := netlink.ParseAddr(ip)
	if err != nil {
		return -1, nil, fmt.Errorf("%s=%q: %w", guest.ParamIP, ip, err)
	}
	if err := netlink.AddrAdd(link, addr); err != nil {
		return -1, nil, fmt.Errorf("address eth0: %w", err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return -1, nil, fmt.Errorf("eth0 up: %w", err)
	}
	if err := netlink.RouteAdd(&netlink.Route{Gw: net.ParseIP(gw)}); err != nil {
		return -1, nil, fmt.Errorf("default route via %q: %w", gw, err)
	}
	say("eth0 %s via %s", ip, gw)
	dst, err := net.ResolveUDPAddr("udp4", Target)
	if err != nil {
		return -1, nil, err
	}
	forged, err := bound(Forged)
	return forged, dst, err
}

// bound is a UDP socket bound to addr, which is not this guest's: it is
// put on lo first.
func bound(addr string) (int, error) {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return -1, err
	}
	a, _ := netlink.ParseAddr(addr + "/32")
	if err := netlink.AddrAdd(lo, a); err != nil {
		return -1, fmt.Errorf("address lo with %s: %w", addr, err)
	}
	if err := netlink.LinkSetUp(lo); err != nil {
		return -1, fmt.Errorf("lo up: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte(net.ParseIP(addr).To4())}); err != nil {
		return -1, fmt.Errorf("bind %s: %w", addr, err)
	}
	return fd, nil
}
