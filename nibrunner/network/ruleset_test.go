package network

import (
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/slot"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from what Render gives (go test -update rewrites it):\n%s", p, got)
	}
}

func sampleRules() Rules {
	return Rules{
		Apps: []App{
			{Slot: 3, AppID: "sleepy", Running: false, HTTPPort: 8080},
			{Slot: 0, AppID: "web", Running: true, HTTPPort: 3000, Ports: []int{5432, 9000}},
			{Slot: 1, AppID: "api", Running: true, HTTPPort: 8080},
		},
		DeniedV4: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("10.9.0.0/16")},
		DeniedV6: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")},
		DNS:      []netip.Addr{netip.MustParseAddr("10.0.0.53"), netip.MustParseAddr("2001:4860:4860::8888"), netip.MustParseAddr("10.0.0.53")},
	}
}

func TestTheRulesetRendersWholeAsTheGoldenFileSays(t *testing.T) {
	got, err := Render(sampleRules())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "nibrun.nft", got)
}

func TestTheRulesetDependsOnlyOnTheSlotsNotTheirOrder(t *testing.T) {
	r := sampleRules()
	a, _ := Render(r)
	r.Apps[0], r.Apps[2] = r.Apps[2], r.Apps[0]
	b, _ := Render(r)
	if a != b {
		t.Fatal("reordering the apps changed the ruleset")
	}
}

func TestOnlyARunningAppsHTTPPortIsPublishedAndRawPortsAreTheRelays(t *testing.T) {
	r := Rules{Apps: []App{{Slot: 5, AppID: "a", HTTPPort: 80, Ports: []int{53}}}}
	off, _ := Render(r)
	r.Apps[0].Running = true
	on, _ := Render(r)
	if strings.Contains(off, "dnat ip to") {
		t.Fatalf("a stopped app has a DNAT rule:\n%s", off)
	}
	if !strings.Contains(on, "tcp dport 21040 dnat ip to 10.201.0.22:80") {
		t.Errorf("running app's ruleset does not publish its HTTP port:\n%s", on)
	}
	if strings.Contains(on, "21041") {
		t.Errorf("a raw port is DNATed past the relay:\n%s", on)
	}
}

func TestGuestsMayReachTheirNameServersAndOnlyOnPort53(t *testing.T) {
	none, _ := Render(Rules{})
	if strings.Contains(none, "dns_v4") {
		t.Fatalf("no name servers, yet a rule for them:\n%s", none)
	}
	got, _ := Render(sampleRules())
	for _, want := range []string{
		"elements = { 10.0.0.53 }",
		"elements = { 2001:4860:4860::8888 }",
		`iifname "nbr*" ip daddr @dns_v4 meta l4proto { tcp, udp } th dport 53 accept`,
		`iifname "nbr*" ip6 daddr @dns_v6 meta l4proto { tcp, udp } th dport 53 accept`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the ruleset lacks %q", want)
		}
	}
	// Before the fence: 10.0.0.53 is in a private range.
	if strings.Index(got, "@dns_v4") > strings.Index(got, "@blocked_v4") {
		t.Error("the name servers are allowed only after the private ranges are refused")
	}
}

func TestTheRulesetRejectsAndDropsOnlyForgedSources(t *testing.T) {
	got, _ := Render(sampleRules())
	chain := ""
	for _, l := range strings.Split(got, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "chain "); ok {
			chain = strings.TrimSuffix(c, " {")
		}
		if strings.Contains(l, "drop") && !strings.HasPrefix(strings.TrimSpace(l), "#") && chain != "antispoof" {
			t.Errorf("chain %s drops: %s", chain, l)
		}
	}
	if !strings.Contains(got, "reject") {
		t.Fatal("the ruleset does not reject")
	}
}

func TestEachTapMaySendFromItsGuestsAddressOnly(t *testing.T) {
	got, _ := Render(sampleRules())
	if !strings.Contains(got, `elements = { "nbr0" . 10.201.0.2, "nbr1" . 10.201.0.6, "nbr3" . 10.201.0.14 }`) {
		t.Errorf("the taps' sources are not their guests' addresses:\n%s", got)
	}
	if !strings.Contains(got, "type filter hook prerouting priority raw;") {
		t.Error("forged sources are not dropped before conntrack")
	}
	// With no app, every tap is refused everything.
	none, err := Render(Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(none, "@guest_sources") || !strings.Contains(none, `drop comment "not the guest's own address"`) {
		t.Errorf("without apps:\n%s", none)
	}
}

func TestRenderRefusesWhatCannotBeRight(t *testing.T) {
	cases := map[string]Rules{
		"slot out of range": {Apps: []App{{Slot: slot.Max, AppID: "a", HTTPPort: 80}}},
		"negative slot":     {Apps: []App{{Slot: -1, AppID: "a", HTTPPort: 80}}},
		"shared slot":       {Apps: []App{{Slot: 1, AppID: "a", HTTPPort: 80}, {Slot: 1, AppID: "b", HTTPPort: 80}}},
		"bad app id":        {Apps: []App{{Slot: 1, AppID: `a" accept #`, HTTPPort: 80}}},
		"port zero":         {Apps: []App{{Slot: 1, AppID: "a", HTTPPort: 0}}},
		"too many ports":    {Apps: []App{{Slot: 1, AppID: "a", HTTPPort: 80, Ports: []int{1, 2, 3, 4, 5, 6, 7, 8}}}},
		"v6 in v4 list":     {DeniedV4: []netip.Prefix{netip.MustParsePrefix("2001:db8::/32")}},
		"v4 in v6 list":     {DeniedV6: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}},
	}
	for name, r := range cases {
		if _, err := Render(r); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestSlotsMapToTheirTapAddressesAndPorts(t *testing.T) {
	cases := []struct {
		n                int
		tap, host, guest string
		port             int
	}{
		{0, "nbr0", "10.201.0.1/30", "10.201.0.2/30", 21000},
		{1, "nbr1", "10.201.0.5/30", "10.201.0.6/30", 21008},
		{63, "nbr63", "10.201.0.253/30", "10.201.0.254/30", 21504},
		{64, "nbr64", "10.201.1.1/30", "10.201.1.2/30", 21512},
		{slot.Max - 1, "nbr5566", "10.201.86.249/30", "10.201.86.250/30", 65528},
	}
	for _, c := range cases {
		if slot.Tap(c.n) != c.tap || HostAddr(c.n).String() != c.host || GuestAddr(c.n).String() != c.guest || slot.HostPort(c.n) != c.port {
			t.Errorf("slot %d: %s %s %s %d", c.n, slot.Tap(c.n), HostAddr(c.n), GuestAddr(c.n), slot.HostPort(c.n))
		}
	}
	if slot.HostPort(slot.Max-1)+slot.PortsPerSlot-1 > 65535 || slot.HostPort(slot.Max)+slot.PortsPerSlot-1 <= 65535 {
		t.Errorf("slot.Max %d does not end where the port range does", slot.Max)
	}
	if got := strings.Join(KernelArgs(1), " "); got != "nibrun.ip=10.201.0.6/30 nibrun.gw=10.201.0.5" {
		t.Errorf("KernelArgs(1) = %s", got)
	}
}

func TestSysctlsAreCheckedAndSetUnderProcSys(t *testing.T) {
	old := ProcSys
	ProcSys = t.TempDir()
	t.Cleanup(func() { ProcSys = old })
	if err := os.MkdirAll(filepath.Join(ProcSys, "net/ipv4"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ProcSys, "net/ipv4/ip_forward"), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []Sysctl{{Key: "net.ipv4.ip_forward", Value: "1", Why: "routing"}}
	wrong := CheckSysctls(want)
	if len(wrong) != 1 || !strings.Contains(wrong[0], "net.ipv4.ip_forward is 0; it must be 1") {
		t.Fatalf("check = %q", wrong)
	}
	if err := SetSysctls(want); err != nil {
		t.Fatal(err)
	}
	if wrong := CheckSysctls(want); len(wrong) != 0 {
		t.Fatalf("after setting: %q", wrong)
	}
	if !strings.Contains(SysctlConf(want), "net.ipv4.ip_forward = 1") {
		t.Fatal("the sysctl.d file does not set ip_forward")
	}
}

func TestOnlyCanonicalTapNamesAreSlots(t *testing.T) {
	for name, want := range map[string]int{"nbr0": 0, "nbr12": 12, "nbr5566": 5566} {
		if n, ok := slotOfTap(name); !ok || n != want {
			t.Errorf("slotOfTap(%q) = %d, %v", name, n, ok)
		}
	}
	for _, name := range []string{"nbr", "nbr01", "nbr-1", "nbr5567", "nbrx", "eth0", "nbr1a"} {
		if n, ok := slotOfTap(name); ok {
			t.Errorf("slotOfTap(%q) = %d", name, n)
		}
	}
}
