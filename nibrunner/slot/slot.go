// Package slot gives each app its place on the host: a persistent slot
// number N, and from it eight host ports (21000+8N … +7: the first for
// HTTP, the rest for raw ports), a /30 out of 10.201.0.0/16 (host .4N+1,
// guest .4N+2) and a tap named nbrN. Memory admission is the
// planner's (nibrunner/plan). Everything here is pure arithmetic over numbers the daemon persists.
package slot

import (
	"fmt"
	"net/netip"
	"sort"

	"alpnib.dev/nibrunner/vmm"
)

const (
	// BasePort is slot 0's HTTP host port.
	BasePort = 21000
	// PortsPerSlot is how many host ports each slot owns.
	PortsPerSlot = 8
	// Max is the number of slots the address plan and port range allow:
	// ports must stay ≤ 65535 (the /16 would allow 16384).
	Max = (65535 - BasePort + 1) / PortsPerSlot
	// TapPrefix starts every slot's tap name.
	TapPrefix = "nbr"
)

// Subnet is the range every slot's /30 is cut from.
var Subnet = netip.MustParsePrefix("10.201.0.0/16")

// Check refuses a slot number outside 0…Max-1.
func Check(n int) error {
	if n < 0 || n >= Max {
		return fmt.Errorf("slot %d is outside 0…%d", n, Max-1)
	}
	return nil
}

// HostPort returns slot n's first (HTTP) host port.
func HostPort(n int) int { return BasePort + PortsPerSlot*n }

// HasPortIn reports whether one of slot n's host ports lies in lo…hi.
func HasPortIn(n, lo, hi int) bool { return HostPort(n)+PortsPerSlot-1 >= lo && HostPort(n) <= hi }

// FirstWithPortIn returns the first of slots 0…limit-1 with a host port in
// lo…hi, if there is one.
func FirstWithPortIn(limit, lo, hi int) (int, bool) {
	for n := range min(limit, Max) {
		if HasPortIn(n, lo, hi) {
			return n, true
		}
	}
	return 0, false
}

// Tap returns slot n's tap device name.
func Tap(n int) string { return fmt.Sprintf("%s%d", TapPrefix, n) }

// Network returns slot n's network.
func Network(n int) vmm.Network {
	sub := Subnet.Addr().As4()
	base := (uint32(sub[0])<<24 | uint32(sub[1])<<16 | uint32(sub[2])<<8 | uint32(sub[3])) + uint32(4*n)
	return vmm.Network{
		Tap:       Tap(n),
		HostIPv4:  addr(base + 1),
		GuestIPv4: addr(base + 2),
		PrefixLen: 30,
		HostPort:  HostPort(n),
	}
}

func addr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Assign gives every app in apps that has no slot in existing the lowest
// free one below limit (and below Max). It returns only the new
// assignments; an app that finds none is listed in full.
func Assign(existing map[string]int, apps []string, limit int) (added map[string]int, full []string) {
	if limit <= 0 || limit > Max {
		limit = Max
	}
	used := make(map[int]bool, len(existing))
	for _, n := range existing {
		used[n] = true
	}
	sorted := append([]string(nil), apps...)
	sort.Strings(sorted)
	added = map[string]int{}
	next := 0
	for _, app := range sorted {
		if _, ok := existing[app]; ok {
			continue
		}
		if _, ok := added[app]; ok {
			continue
		}
		for next < limit && used[next] {
			next++
		}
		if next >= limit {
			full = append(full, app)
			continue
		}
		added[app] = next
		used[next] = true
	}
	return added, full
}
