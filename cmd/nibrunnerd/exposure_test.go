package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/proxy"
	"alpnib.dev/nibrunner/proxy/raw"
	"alpnib.dev/nibrunner/route"
)

// TestFromAnotherNamespaceOnlyTheConfiguredListenersAnswer is the host as
// a neighbour sees it: a namespace holding the host's listeners as serve
// binds them ([proxy.http] and [proxy.raw] listen_address), wired by a
// veth to another namespace. The proxy answers on its listen address and
// port alone, the raw port (tcp and udp) on proxy.raw.listen_address
// alone, over IPv4 or IPv6 as configured; nothing answers anywhere else.
// The apps behind them answer where the test runs, on loopback (the
// proxy and the relay dial them from there).
func TestFromAnotherNamespaceOnlyTheConfiguredListenersAnswer(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "ip")
	id := fmt.Sprintf("nbx%d", os.Getpid()%100000)
	host, out := testenv.Netns(t, id+"-h"), testenv.Netns(t, id+"-o")
	testenv.IP(t, "-n", host, "link", "add", "up0", "type", "veth", "peer", "name", "uplink", "netns", out)
	testenv.IP(t, "-n", host, "addr", "add", "192.0.2.1/24", "dev", "up0")
	testenv.IP(t, "-n", host, "addr", "add", "2001:db8::1/64", "dev", "up0", "nodad")
	testenv.IP(t, "-n", host, "link", "set", "up0", "up")
	testenv.IP(t, "-n", out, "addr", "add", "192.0.2.2/24", "dev", "uplink")
	testenv.IP(t, "-n", out, "addr", "add", "2001:db8::2/64", "dev", "uplink", "nodad")
	testenv.IP(t, "-n", out, "link", "set", "uplink", "up")

	web := testenv.ServeTCP(t, "", "127.0.0.1:0", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nweb")
	rawTCP := testenv.ServeTCP(t, "", "127.0.0.1:0", "raw-tcp")
	// The relay carries a port's tcp and udp to one address.
	testenv.ServeUDP(t, "", rawTCP, "raw-udp")

	const proxyPort, rawPort = "8080", "21001"
	for _, c := range []struct{ name, proxyAddr, rawAddr string }{
		{"BothOnLoopbackAsTheTesterConfigured", "127.0.0.1", "127.0.0.1"},
		{"TheProxyOnTheHostsIPv4AddressAndTheRelayOnLoopback", "192.0.2.1", "127.0.0.1"},
		{"BothOnTheHostsIPv6Address", "2001:db8::1", "2001:db8::1"},
		{"TheProxyOnIPv6LoopbackAndTheRelayOnTheHostsIPv4Address", "::1", "192.0.2.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			px := proxy.New(proxy.Options{Logf: t.Logf})
			defer px.Close()
			if err := px.Apply(ctx, []route.Route{{Hostname: "web.example.net", AppID: "web", HostPort: 21000, Addr: web, State: route.Up}}); err != nil {
				t.Fatal(err)
			}
			relay := raw.New(raw.Options{ListenAddress: c.rawAddr})
			defer relay.Close()
			var front *proxy.Server
			err := testenv.InNetns(host, func() (err error) {
				if front, err = px.Listen(ctx, proxy.ListenConfig{Address: net.JoinHostPort(c.proxyAddr, proxyPort)}); err != nil {
					return err
				}
				return relay.ApplyPorts(ctx, []route.Port{{AppID: "web", Index: 1, HostPort: 21001, Addr: rawTCP, State: route.Up}})
			})
			if err != nil {
				t.Fatal(err)
			}
			go front.Serve(ctx)

			for _, a := range []struct{ ns, addr string }{
				{host, "127.0.0.1"}, {host, "::1"}, {host, "192.0.2.1"}, {host, "2001:db8::1"},
				{out, "192.0.2.1"}, {out, "2001:db8::1"},
			} {
				where := a.ns + " to " + a.addr
				get := "GET / HTTP/1.1\r\nHost: web.example.net\r\nConnection: close\r\n\r\n"
				got, _, err := testenv.DialTCP(a.ns, net.JoinHostPort(a.addr, proxyPort), get)
				switch {
				case a.addr == c.proxyAddr && (err != nil || !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.HasSuffix(got, "web")):
					t.Errorf("from %s: the proxy's listen address answered %q, %v; want the app's 200", where, got, err)
				case a.addr != c.proxyAddr:
					testenv.MustBeRefused(t, a.ns, net.JoinHostPort(a.addr, proxyPort))
				}
				rawAt := net.JoinHostPort(a.addr, rawPort)
				got, _, err = testenv.DialTCP(a.ns, rawAt, "")
				udp, uerr := testenv.ExchangeUDP(a.ns, rawAt)
				if a.addr == c.rawAddr {
					if err != nil || got != "raw-tcp from 127.0.0.1" {
						t.Errorf("from %s: the raw port over tcp said %q, %v", where, got, err)
					}
					if uerr != nil || udp != "raw-udp from 127.0.0.1" {
						t.Errorf("from %s: the raw port over udp said %q, %v", where, udp, uerr)
					}
					continue
				}
				testenv.MustBeRefused(t, a.ns, rawAt)
				if uerr == nil {
					t.Errorf("from %s: udp to the raw port answered %q off its listen address", where, udp)
				}
				// The app's HTTP host port is nobody's to reach here.
				testenv.MustBeRefused(t, a.ns, net.JoinHostPort(a.addr, "21000"))
			}
		})
	}
}
