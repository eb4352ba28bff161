package network

import (
	"testing"

	"alpnib.dev/nibrunner/slot"
)

// The daemon assigns slots and boots guests with nibrunner/slot's numbers
// while this package fences and publishes them with its own; until one
// derives from the other, this pins that they agree on every slot, so a
// firewall can never guard addresses the guests do not have.
func TestTheFirewallsSlotsAreTheOnesTheDaemonBootsGuestsInto(t *testing.T) {
	if MaxSlots != slot.Max || PortsPerSlot != slot.PortsPerSlot || FirstHostPort != slot.BasePort {
		t.Fatalf("slot plans differ: network has %d slots of %d ports from %d, slot has %d of %d from %d",
			MaxSlots, PortsPerSlot, FirstHostPort, slot.Max, slot.PortsPerSlot, slot.BasePort)
	}
	for n := range MaxSlots {
		s := slot.Network(n)
		if s.Tap != TapName(n) || s.HostIPv4 != HostAddr(n).Addr() || s.GuestIPv4 != GuestAddr(n).Addr() ||
			s.PrefixLen != GuestAddr(n).Bits() || s.HostPort != HostPort(n) {
			t.Fatalf("slot %d: the daemon has %+v, the firewall %s %s %s port %d", n, s, TapName(n), HostAddr(n), GuestAddr(n), HostPort(n))
		}
	}
}
