package hostconfig

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

func TestGuestsGetTheHostsResolversExceptLoopbackOnesElseThePublicOnes(t *testing.T) {
	for name, tc := range map[string]struct {
		conf string
		want []netip.Addr
	}{
		"the host's":           {"# generated\nsearch example.com\nnameserver 10.0.0.2\nnameserver 2001:4860:4860::8844\n", addrs("10.0.0.2", "2001:4860:4860::8844")},
		"a local stub skipped": {"nameserver 127.0.0.53\noptions edns0\nnameserver 192.0.2.53\n", addrs("192.0.2.53")},
		"only a local stub":    {"nameserver 127.0.0.53\nnameserver ::1\n", DefaultDNS},
		"link-local skipped":   {"nameserver fe80::1%eth0\nnameserver 198.51.100.1\n", addrs("198.51.100.1")},
		"at most three":        {"nameserver 192.0.2.1\nnameserver 192.0.2.2\nnameserver 192.0.2.2\nnameserver 192.0.2.3\nnameserver 192.0.2.4\n", addrs("192.0.2.1", "192.0.2.2", "192.0.2.3")},
		"none":                 {"", DefaultDNS},
	} {
		if got := HostDNS([]byte(tc.conf)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

func TestDNSServersAreTakenAsWrittenAndAbsentMeansTheHosts(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(conf, []byte("nameserver 203.0.113.53\n"), 0o644)
	old := ResolvConf
	ResolvConf = conf
	t.Cleanup(func() { ResolvConf = old })

	if got := mustParse(t, readFull(t)).Network.DNS; !slices.Equal(got, addrs("203.0.113.53")) {
		t.Errorf("absent dns_servers gave %v, want the host's", got)
	}
	with := bytes.Replace(readFull(t), []byte("[network]\n"), []byte("[network]\ndns_servers = [\"192.0.2.53\", \"2001:db8::53\"]\n"), 1)
	if got := mustParse(t, with).Network.DNS; !slices.Equal(got, addrs("192.0.2.53", "2001:db8::53")) {
		t.Errorf("dns_servers gave %v", got)
	}
	none := bytes.Replace(readFull(t), []byte("[network]\n"), []byte("[network]\ndns_servers = []\n"), 1)
	if got := mustParse(t, none).Network.DNS; len(got) != 0 {
		t.Errorf("dns_servers = [] gave %v, want none", got)
	}
	bad := bytes.Replace(readFull(t), []byte("[network]\n"), []byte("[network]\ndns_servers = [\"dns.google\"]\n"), 1)
	wantReason(t, bad, `network.dns_servers[0] is "dns.google"; it must be an IP address`)
}
