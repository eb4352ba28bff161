package network

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"alpnib.dev/nibrunner/slot"
	"github.com/vishvananda/netlink"
)

// EnsureTap makes slot n's tap (persistent, so QEMU can attach to it by
// name and it outlives a daemon restart), gives it the host's address and
// brings it up. Idempotent.
func EnsureTap(n int) error {
	if err := slot.Check(n); err != nil {
		return err
	}
	name := slot.Tap(n)
	if _, err := netlink.LinkByName(name); err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return fmt.Errorf("look up tap %s: %w", name, err)
		}
		tap := &netlink.Tuntap{
			LinkAttrs: netlink.LinkAttrs{Name: name},
			Mode:      netlink.TUNTAP_MODE_TAP,
			// No TUN_EXCL: QEMU opens it again by name. VNET_HDR lets
			// virtio-net offload checksums.
			Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR | netlink.TUNTAP_ONE_QUEUE,
		}
		if err := netlink.LinkAdd(tap); err != nil {
			return fmt.Errorf("create tap %s: %w", name, err)
		}
		// LinkAdd opened the queue to create the device; the device is
		// persistent, so the file can go.
		for _, f := range tap.Fds {
			f.Close()
		}
	}
	return ConfigureLink(n, name)
}

// ConfigureLink gives an existing link slot n's host address, its sysctls
// and brings it up. Tests use it on veth pairs standing in for taps.
func ConfigureLink(n int, name string) error {
	link, err := netlink.LinkByName(name)
	if err != nil {
		return fmt.Errorf("look up %s: %w", name, err)
	}
	if err := SetSysctls(TapSysctls(name)); err != nil {
		return fmt.Errorf("configure %s: %w", name, err)
	}
	host := HostAddr(n)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: host.Addr().AsSlice(), Mask: net.CIDRMask(host.Bits(), 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return fmt.Errorf("address %s on %s: %w", host, name, err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return fmt.Errorf("bring %s up: %w", name, err)
	}
	return nil
}

// RemoveTap deletes slot n's tap; a missing one is fine.
func RemoveTap(n int) error {
	link, err := netlink.LinkByName(slot.Tap(n))
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("look up tap %s: %w", slot.Tap(n), err)
	}
	if err := netlink.LinkDel(link); err != nil {
		return fmt.Errorf("delete tap %s: %w", slot.Tap(n), err)
	}
	return nil
}

// Taps returns the slots that have a tap on the host, so the daemon can
// remove those of forgotten apps.
func Taps() ([]int, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	var slots []int
	for _, l := range links {
		if n, ok := slotOfTap(l.Attrs().Name); ok && l.Type() == "tuntap" {
			slots = append(slots, n)
		}
	}
	return slots, nil
}

func slotOfTap(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, slot.TapPrefix)
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || slot.Check(n) != nil || slot.Tap(n) != name {
		return 0, false
	}
	return n, true
}
