// Package network gives each app's microVM its own small, fenced network:
// a tap device per slot with a /30 out of 10.201.0.0/16, the host sysctls
// routing needs, and one nftables table, nibrun, that is rendered whole from
// the current slots and applied in one transaction.
//
// Rendering is a pure function (Render), so what the firewall says is
// reviewable as text and pinned by a golden file; applying is one `nft -f`
// run, so the kernel never holds half a ruleset. The rules isolate guests
// (no host, no other guest, no private or metadata address, no denied
// CIDR), publish an app's host ports by DNAT only while it runs, masquerade
// what guests send out, and always reject rather than drop, so a refused
// connection fails at once instead of hanging until its timeout.
package network

import (
	"fmt"
	"net/netip"

	"alpnib.dev/nibrunner/guest"
)

// Slot numbering. Each app keeps a slot N for life: tap nbrN, host address
// 10.201.(4N+1)/30, guest 10.201.(4N+2), host ports 21000+8N … +7.
const (
	TapPrefix     = "nbr"
	FirstHostPort = 21000
	PortsPerSlot  = 8
	// MaxSlots is bounded by the port range (21000+8N+7 ≤ 65535) before
	// the /16 (16384 /30s) runs out.
	MaxSlots = (65535-FirstHostPort-(PortsPerSlot-1))/PortsPerSlot + 1
)

// Subnet is the range every slot's /30 is cut from.
var Subnet = netip.MustParsePrefix("10.201.0.0/16")

// CheckSlot refuses a slot number outside 0…MaxSlots-1.
func CheckSlot(n int) error {
	if n < 0 || n >= MaxSlots {
		return fmt.Errorf("slot %d is outside 0…%d", n, MaxSlots-1)
	}
	return nil
}

// TapName is slot n's tap device.
func TapName(n int) string { return fmt.Sprintf("%s%d", TapPrefix, n) }

func slotAddr(n, offset int) netip.Addr {
	base := Subnet.Addr().As4()
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += uint32(4*n + offset)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// HostAddr is the host's end of slot n's /30 (the guest's gateway).
func HostAddr(n int) netip.Prefix { return netip.PrefixFrom(slotAddr(n, 1), 30) }

// GuestAddr is the guest's address in slot n.
func GuestAddr(n int) netip.Prefix { return netip.PrefixFrom(slotAddr(n, 2), 30) }

// HostPort is slot n's HTTP host port; raw port i (1-based) is HostPort+i.
func HostPort(n int) int { return FirstHostPort + PortsPerSlot*n }

// KernelArgs are the kernel command line parameters nibrun-init reads to
// configure slot n's guest interface (the guest contract's nibrun.ip and
// nibrun.gw).
func KernelArgs(n int) []string {
	return []string{
		guest.ParamIP + "=" + GuestAddr(n).String(),
		guest.ParamGateway + "=" + HostAddr(n).Addr().String(),
	}
}
