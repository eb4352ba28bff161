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
// what guests send out, and reject rather than drop, so a refused
// connection fails at once instead of hanging until its timeout. The one
// drop is a packet from a tap whose source is not that tap's guest's
// address: forged, it is dropped before conntrack, as any answer would go
// to the forged address.
package network

import (
	"net/netip"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/slot"
)

// Slot numbering is package slot's: each app keeps a slot N for life,
// with tap nbrN, host address 10.201.(4N+1)/30, guest 10.201.(4N+2) and
// host ports 21000+8N … +7. This package fences and publishes those.

// HostAddr is the host's end of slot n's /30 (the guest's gateway).
func HostAddr(n int) netip.Prefix {
	nw := slot.Network(n)
	return netip.PrefixFrom(nw.HostIPv4, nw.PrefixLen)
}

// GuestAddr is the guest's address in slot n.
func GuestAddr(n int) netip.Prefix {
	nw := slot.Network(n)
	return netip.PrefixFrom(nw.GuestIPv4, nw.PrefixLen)
}

// KernelArgs are the kernel command line parameters nibrun-init reads to
// configure slot n's guest interface (the guest contract's nibrun.ip and
// nibrun.gw).
func KernelArgs(n int) []string {
	return []string{
		guest.ParamIP + "=" + GuestAddr(n).String(),
		guest.ParamGateway + "=" + HostAddr(n).Addr().String(),
	}
}
