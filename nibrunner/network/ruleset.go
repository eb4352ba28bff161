package network

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strings"

	"alpnib.dev/nibrunner/slot"
)

// App is one slot as the firewall sees it.
type App struct {
	Slot  int
	AppID string
	// Running publishes the HTTP host port to the host itself: a
	// connection the host makes to 127.0.0.1:21000+8N reaches the guest.
	// Nothing from outside the host reaches it, running or not.
	Running  bool
	HTTPPort int // guest port behind host port 21000+8N
	// Ports are the guest's raw ports. They are not published here: the
	// raw relay (nibrunner/proxy/raw) listens on host ports 21000+8N+1, +2,
	// … at [proxy.raw] listen_address and connects to the guest itself,
	// which the rules allow as they allow the host anything.
	Ports []int
}

// Rules is everything the nibrun table is a function of.
type Rules struct {
	Apps     []App
	DeniedV4 []netip.Prefix // [network] denied_egress_addresses_v4
	DeniedV6 []netip.Prefix // [network] denied_egress_addresses_v6
	// DNS are the name servers guests are given ([network] dns_servers):
	// guests may reach them on port 53, tcp and udp, even where the fence
	// would refuse the address (a resolver in a private range, or one on
	// the host itself).
	DNS []netip.Addr
}

// Table is the nftables table this package owns, and the only one it
// touches.
const Table = "nibrun"

// Ranges no guest may send to, whatever the host's configuration says:
// this-network, RFC1918, CGNAT, loopback, link-local (which holds the
// 169.254.169.254 metadata address clouds answer on), multicast and
// reserved; for IPv6 loopback, ULA, link-local and multicast.
var (
	blockedV4 = []string{"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.168.0.0/16", "224.0.0.0/4", "240.0.0.0/4"}
	blockedV6 = []string{"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8"}
)

var appIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// Render returns the nft script that replaces the nibrun table with the one
// r describes, in one transaction: declare it (so the delete cannot fail on
// a host that has none yet), delete it, define it whole. The output depends
// only on r, not on the order of its slices.
func Render(r Rules) (string, error) {
	apps := append([]App(nil), r.Apps...)
	sort.Slice(apps, func(i, j int) bool { return apps[i].Slot < apps[j].Slot })
	seen := map[int]string{}
	for _, a := range apps {
		if err := slot.Check(a.Slot); err != nil {
			return "", fmt.Errorf("app %s: %w", a.AppID, err)
		}
		if !appIDPattern.MatchString(a.AppID) {
			return "", fmt.Errorf("slot %d: %q is not an app identifier", a.Slot, a.AppID)
		}
		if other, dup := seen[a.Slot]; dup {
			return "", fmt.Errorf("apps %s and %s both hold slot %d", other, a.AppID, a.Slot)
		}
		seen[a.Slot] = a.AppID
		if len(a.Ports) > slot.PortsPerSlot-1 {
			return "", fmt.Errorf("app %s: %d raw ports; a slot has room for %d", a.AppID, len(a.Ports), slot.PortsPerSlot-1)
		}
		for _, p := range append([]int{a.HTTPPort}, a.Ports...) {
			if p < 1 || p > 65535 {
				return "", fmt.Errorf("app %s: guest port %d is outside 1…65535", a.AppID, p)
			}
		}
	}
	v4, err := prefixes(blockedV4, r.DeniedV4, true)
	if err != nil {
		return "", err
	}
	v6, err := prefixes(blockedV6, r.DeniedV6, false)
	if err != nil {
		return "", err
	}

	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	tap := slot.TapPrefix + "*"
	reject := "goto refuse"

	w("# The nibrun table, written whole by nibrunnerd. Do not edit: the next")
	w("# pass replaces it. Guests sit on the %s* taps in %s.", slot.TapPrefix, slot.Subnet)
	w("table inet %s", Table)
	w("delete table inet %s", Table)
	w("table inet %s {", Table)
	w("\t# Where no guest may send: private, shared, link-local (metadata),")
	w("\t# loopback, multicast and reserved ranges, and the host's denied CIDRs.")
	w("\tset blocked_v4 {")
	w("\t\ttype ipv4_addr")
	w("\t\tflags interval")
	w("\t\tauto-merge")
	w("\t\telements = { %s }", strings.Join(v4, ", "))
	w("\t}")
	w("")
	w("\tset blocked_v6 {")
	w("\t\ttype ipv6_addr")
	w("\t\tflags interval")
	w("\t\tauto-merge")
	w("\t\telements = { %s }", strings.Join(v6, ", "))
	w("\t}")
	w("")
	if len(apps) > 0 {
		w("\t# Each tap and the one source address its guest may send from.")
		w("\tset guest_sources {")
		w("\t\ttype ifname . ipv4_addr")
		var el []string
		for _, a := range apps {
			el = append(el, fmt.Sprintf("\"%s\" . %s", slot.Tap(a.Slot), GuestAddr(a.Slot).Addr()))
		}
		w("\t\telements = { %s }", strings.Join(el, ", "))
		w("\t}")
		w("")
	}
	dns4, dns6 := dnsSets(r.DNS)
	if len(dns4) > 0 {
		w("\t# The name servers guests are given.")
		w("\tset dns_v4 {")
		w("\t\ttype ipv4_addr")
		w("\t\telements = { %s }", strings.Join(dns4, ", "))
		w("\t}")
		w("")
	}
	if len(dns6) > 0 {
		w("\tset dns_v6 {")
		w("\t\ttype ipv6_addr")
		w("\t\telements = { %s }", strings.Join(dns6, ", "))
		w("\t}")
		w("")
	}
	allowDNS := func(indent string) {
		if len(dns4) > 0 {
			w("%siifname \"%s\" ip daddr @dns_v4 meta l4proto { tcp, udp } th dport 53 accept comment \"name servers\"", indent, tap)
		}
		if len(dns6) > 0 {
			w("%siifname \"%s\" ip6 daddr @dns_v6 meta l4proto { tcp, udp } th dport 53 accept comment \"name servers\"", indent, tap)
		}
	}
	w("\t# A guest sends from its own address or not at all. Before conntrack")
	w("\t# (priority raw), so a forged packet makes no connection either, and")
	w("\t# dropped, the one drop here: any answer would go to the forged")
	w("\t# address. A tap no app holds sends nothing; the taps are IPv4-only.")
	w("\tchain antispoof {")
	w("\t\ttype filter hook prerouting priority raw; policy accept;")
	w("\t\tiifname != \"%s\" accept", tap)
	if len(apps) > 0 {
		w("\t\tiifname . ip saddr @guest_sources accept")
	}
	w("\t\tdrop comment \"not the guest's own address\"")
	w("\t}")
	w("")
	w("\t# HTTP host ports of running apps, to their guests, for the host alone:")
	w("\t# only what the host itself sends to a loopback address is published")
	w("\t# (the output hook; there is no prerouting DNAT). Nothing arriving from")
	w("\t# outside, and no other address of the host, reaches a guest. The proxy")
	w("\t# dials guests at their tap addresses; raw ports are the raw relay's,")
	w("\t# which listens on the host and connects itself.")
	w("\tchain publish {")
	for _, a := range apps {
		if !a.Running {
			continue
		}
		guest := GuestAddr(a.Slot).Addr()
		w("\t\ttcp dport %d dnat ip to %s:%d comment \"%s http\"", slot.HostPort(a.Slot), guest, a.HTTPPort, a.AppID)
	}
	w("\t}")
	w("")
	w("\tchain output {")
	w("\t\ttype nat hook output priority -100; policy accept;")
	w("\t\tip daddr 127.0.0.0/8 jump publish")
	w("\t}")
	w("")
	w("\tchain postrouting {")
	w("\t\ttype nat hook postrouting priority srcnat; policy accept;")
	w("\t\t# Guests' own traffic leaves as the host.")
	w("\t\tip saddr %s oifname != \"%s\" masquerade", slot.Subnet, tap)
	w("\t\t# The host reaching a published port on 127.0.0.1: the guest")
	w("\t\t# cannot answer a loopback source, so give it the tap's.")
	w("\t\tip saddr 127.0.0.0/8 oifname \"%s\" masquerade", tap)
	w("\t}")
	w("")
	w("\t# Refusals answer at once: a TCP reset (never rate-limited, so a")
	w("\t# client sees \"connection refused\" on its first try), otherwise an")
	w("\t# ICMP administratively-prohibited. Nothing goes unanswered.")
	w("\tchain refuse {")
	w("\t\tmeta l4proto tcp reject with tcp reset")
	w("\t\treject with icmpx admin-prohibited")
	w("\t}")
	w("")
	w("\tchain forward {")
	w("\t\ttype filter hook forward priority filter; policy accept;")
	w("\t\tct state established,related accept")
	w("\t\tiifname \"%s\" oifname \"%s\" %s comment \"guest to guest\"", tap, tap, reject)
	allowDNS("\t\t")
	w("\t\tiifname \"%s\" ip daddr @blocked_v4 %s", tap, reject)
	w("\t\tiifname \"%s\" ip6 daddr @blocked_v6 %s", tap, reject)
	w("\t\tiifname \"%s\" accept", tap)
	w("\t\toifname \"%s\" %s comment \"nothing from outside reaches a guest\"", tap, reject)
	w("\t}")
	w("")
	w("\tchain input {")
	w("\t\ttype filter hook input priority filter; policy accept;")
	w("\t\tiifname \"%s\" ct state established,related accept", tap)
	allowDNS("\t\t")
	w("\t\tiifname \"%s\" %s comment \"guests cannot reach the host\"", tap, reject)
	w("\t}")
	w("}")
	return b.String(), nil
}

// dnsSets splits the name servers by family, in a stable order, once each.
func dnsSets(servers []netip.Addr) (v4, v6 []string) {
	seen := map[netip.Addr]bool{}
	for _, a := range servers {
		a = a.Unmap()
		if !a.IsValid() || seen[a] {
			continue
		}
		seen[a] = true
		if a.Is4() {
			v4 = append(v4, a.String())
		} else {
			v6 = append(v6, a.WithZone("").String())
		}
	}
	sort.Strings(v4)
	sort.Strings(v6)
	return v4, v6
}

func prefixes(fixed []string, extra []netip.Prefix, v4 bool) ([]string, error) {
	out := append([]string(nil), fixed...)
	seen := map[string]bool{}
	for _, s := range fixed {
		seen[s] = true
	}
	for _, p := range extra {
		if !p.IsValid() || p.Addr().Is4() != v4 || p.Addr().Is4In6() {
			family := "IPv6"
			if v4 {
				family = "IPv4"
			}
			return nil, fmt.Errorf("denied address %s is not an %s CIDR", p, family)
		}
		s := p.Masked().String()
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}
