package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

// kernelParams reads name=value words from the kernel command line.
func kernelParams() map[string]string {
	b, _ := os.ReadFile("/proc/cmdline")
	return parseParams(string(b))
}

// parseParams splits a kernel command line; a word without = is a flag
// and is left out, and a later value wins.
func parseParams(cmdline string) map[string]string {
	out := map[string]string{}
	for _, w := range strings.Fields(cmdline) {
		if k, v, ok := strings.Cut(w, "="); ok {
			out[k] = v
		}
	}
	return out
}

// configureNetwork brings up lo and, when the host gave an address, eth0
// with that address and a default route. A guest without nibrun.ip has no
// network beyond loopback.
func configureNetwork(root string) error {
	stackedRoot = root
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	p := kernelParams()
	if dns := p[guest.ParamDNS]; dns != "" {
		if err := bindResolvConf(root, dns); err != nil {
			return err
		}
	}
	if p[guest.ParamIP] == "" {
		return nil
	}
	eth, err := waitEth0(10 * time.Second)
	if err != nil {
		return err
	}
	return addressEth0(eth, p[guest.ParamIP], p[guest.ParamGateway])
}

func waitEth0(wait time.Duration) (netlink.Link, error) {
	deadline := time.Now().Add(wait)
	for {
		eth, err := netlink.LinkByName("eth0")
		if err == nil {
			return eth, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no eth0 after %s: %w", wait, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// addressEth0 gives eth0 the address ipText (with prefix), brings it up
// and routes through gw when set.
func addressEth0(eth netlink.Link, ipText, gw string) error {
	addr, err := netlink.ParseAddr(ipText)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", guest.ParamIP, ipText, err)
	}
	if err := netlink.AddrReplace(eth, addr); err != nil {
		return fmt.Errorf("address eth0 with %s: %w", ipText, err)
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return fmt.Errorf("bring eth0 up: %w", err)
	}
	if gw != "" {
		ip := net.ParseIP(gw)
		if ip == nil {
			return fmt.Errorf("%s=%q is not an address", guest.ParamGateway, gw)
		}
		if err := netlink.RouteReplace(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: ip}); err != nil {
			return fmt.Errorf("route via %s: %w", gw, err)
		}
	}
	logf("eth0 %s", ipText)
	return nil
}

// setNetwork moves a running guest to the network n, after a wake from a
// snapshot taken in another slot or on another host: eth0 gets n's address
// in place of every other, the default route goes through n's gateway, the
// neighbour entries (the old host's MAC for the old gateway) are dropped,
// and the resolv.conf the tenant reads names n's name servers.
func setNetwork(n *guest.Network) error {
	if n == nil {
		return fmt.Errorf("%s without a network", guest.KindSetNetwork)
	}
	if n.DNS != "" {
		if err := setResolvConf(n.DNS); err != nil {
			return fmt.Errorf("name servers %s: %w", n.DNS, err)
		}
	}
	if n.IP == "" {
		return nil
	}
	eth, err := waitEth0(time.Second)
	if err != nil {
		return err
	}
	addr, err := netlink.ParseAddr(n.IP)
	if err != nil {
		return fmt.Errorf("%s: %w", n.IP, err)
	}
	if err := addressEth0(eth, n.IP, n.Gateway); err != nil {
		return err
	}
	old, err := netlink.AddrList(eth, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("list eth0's addresses: %w", err)
	}
	for _, a := range old {
		if !a.IPNet.IP.Equal(addr.IP) {
			if err := netlink.AddrDel(eth, &a); err != nil {
				return fmt.Errorf("drop eth0's old address %s: %w", a.IPNet, err)
			}
		}
	}
	neigh, _ := netlink.NeighList(eth.Attrs().Index, netlink.FAMILY_V4)
	for _, e := range neigh {
		_ = netlink.NeighDel(&e)
	}
	// Dropping the old address took the routes through it: route again.
	return addressEth0(eth, n.IP, n.Gateway)
}

// resolvRoot is the tenant's root whose resolv.conf bindResolvConf covers,
// or "" before it did.
var resolvRoot, stackedRoot string

// setResolvConf names dns in the resolv.conf the tenant reads: the one
// bindResolvConf laid (written in place, so the bind shows it), or a new
// bind when the guest booted without name servers.
func setResolvConf(dns string) error {
	if resolvRoot == "" {
		if stackedRoot == "" {
			return fmt.Errorf("no root to lay a resolv.conf over")
		}
		return bindResolvConf(stackedRoot, dns)
	}
	return os.WriteFile("/run/resolv.conf", []byte(resolvConf(dns)), 0o644)
}

func resolvConf(dns string) string {
	var conf strings.Builder
	for _, s := range strings.Split(dns, ",") {
		if s = strings.TrimSpace(s); s != "" {
			conf.WriteString("nameserver " + s + "\n")
		}
	}
	return conf.String()
}

// bindResolvConf lays a resolv.conf naming dns over the root's, so the
// tenant's volume is not written with a host detail that may change.
func bindResolvConf(root, dns string) error {
	src := "/run/resolv.conf"
	if err := os.WriteFile(src, []byte(resolvConf(dns)), 0o644); err != nil {
		return err
	}
	dst := filepath.Join(root, "etc", "resolv.conf")
	if _, err := os.Stat(dst); err != nil {
		_ = os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, nil, 0o644); err != nil {
			return err
		}
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind resolv.conf: %w", err)
	}
	resolvRoot = root
	return nil
}
