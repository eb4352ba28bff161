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
	if lo, err := netlink.LinkByName("lo"); err == nil {
		_ = netlink.LinkSetUp(lo)
	}
	p := kernelParams()
	if dns := p[guest.ParamDNS]; dns != "" {
		if err := bindResolvConf(root, dns); err != nil {
			return err
		}
	}
	ipText := p[guest.ParamIP]
	if ipText == "" {
		return nil
	}
	addr, err := netlink.ParseAddr(ipText)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", guest.ParamIP, ipText, err)
	}
	var eth netlink.Link
	deadline := time.Now().Add(10 * time.Second)
	for {
		if eth, err = netlink.LinkByName("eth0"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no eth0 after 10s: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := netlink.AddrReplace(eth, addr); err != nil {
		return fmt.Errorf("address eth0 with %s: %w", ipText, err)
	}
	if err := netlink.LinkSetUp(eth); err != nil {
		return fmt.Errorf("bring eth0 up: %w", err)
	}
	if gw := p[guest.ParamGateway]; gw != "" {
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

// bindResolvConf lays a resolv.conf naming dns over the root's, so the
// tenant's volume is not written with a host detail that may change.
func bindResolvConf(root, dns string) error {
	src := "/run/resolv.conf"
	var conf strings.Builder
	for _, s := range strings.Split(dns, ",") {
		if s = strings.TrimSpace(s); s != "" {
			conf.WriteString("nameserver " + s + "\n")
		}
	}
	if err := os.WriteFile(src, []byte(conf.String()), 0o644); err != nil {
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
	return nil
}
