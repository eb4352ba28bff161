package network

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sysctl is one kernel setting the host needs.
type Sysctl struct {
	Key   string // dotted, as sysctl(8) names it
	Value string
	Why   string
}

// HostSysctls are what guests' networking needs of the host: routing
// between the taps and the uplink. Install sets them (and persists them in
// /etc/sysctl.d); the daemon checks them at start.
var HostSysctls = []Sysctl{
	{"net.ipv4.ip_forward", "1", "guests' traffic is routed through the host"},
	{"net.ipv4.conf.all.forwarding", "1", "guests' traffic is routed through the host"},
}

// TapSysctls are set on each tap: no IPv6 (guests are IPv4-only, and a
// link-local address would be a way around the IPv4 fence), and loopback
// sources routable out of it, so the host can reach a published port at
// 127.0.0.1 (the nibrun table masquerades those).
func TapSysctls(tap string) []Sysctl {
	return []Sysctl{
		{"net.ipv6.conf." + tap + ".disable_ipv6", "1", "guests are IPv4-only"},
		{"net.ipv4.conf." + tap + ".route_localnet", "1", "the host reaches published ports on 127.0.0.1"},
	}
}

// ProcSys is where sysctls live; tests point it elsewhere.
var ProcSys = "/proc/sys"

func sysctlPath(key string) string {
	return filepath.Join(ProcSys, strings.ReplaceAll(key, ".", "/"))
}

// CheckSysctls returns one sentence per setting that differs from what is
// needed; none means the host is ready.
func CheckSysctls(want []Sysctl) []string {
	var wrong []string
	for _, s := range want {
		b, err := os.ReadFile(sysctlPath(s.Key))
		if err != nil {
			wrong = append(wrong, fmt.Sprintf("%s cannot be read (%v); it must be %s: %s", s.Key, err, s.Value, s.Why))
			continue
		}
		if got := strings.TrimSpace(string(b)); got != s.Value {
			wrong = append(wrong, fmt.Sprintf("%s is %s; it must be %s: %s (nibrunnerd install sets it)", s.Key, got, s.Value, s.Why))
		}
	}
	return wrong
}

// SetSysctls writes each setting that differs.
func SetSysctls(want []Sysctl) error {
	for _, s := range want {
		p := sysctlPath(s.Key)
		if strings.HasPrefix(s.Key, "net.ipv6.") && !exists(filepath.Join(ProcSys, "net/ipv6")) {
			continue // a kernel without IPv6 has nothing to turn off
		}
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == s.Value {
			continue
		}
		if err := os.WriteFile(p, []byte(s.Value+"\n"), 0o644); err != nil {
			return fmt.Errorf("set %s=%s: %w", s.Key, s.Value, err)
		}
	}
	return nil
}

// SysctlConf is the /etc/sysctl.d file install writes so the settings
// survive a reboot.
func SysctlConf(want []Sysctl) string {
	var b strings.Builder
	b.WriteString("# Written by nibrunnerd install: what its guests' networking needs.\n")
	for _, s := range want {
		fmt.Fprintf(&b, "# %s\n%s = %s\n", s.Why, s.Key, s.Value)
	}
	return b.String()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// EphemeralPorts is the kernel's range of local ports for outgoing
// connections (net.ipv4.ip_local_port_range), or Linux's default when it
// cannot be read.
func EphemeralPorts() (lo, hi int) {
	b, err := os.ReadFile(sysctlPath("net.ipv4.ip_local_port_range"))
	if err == nil {
		if _, err := fmt.Sscan(string(b), &lo, &hi); err == nil && lo > 0 && hi >= lo {
			return lo, hi
		}
	}
	return 32768, 60999
}
