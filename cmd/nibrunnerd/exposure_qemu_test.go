package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
)

// TestOnARealMicroVMOnlyTheConfiguredListenersAnswerFromAnotherNamespace
// is issue 16 as the tester found it: nibrunnerd serve runs
// examples/apps/echo in a microVM (QEMU, TCG here) on its tap behind the
// nibrun table, with [proxy.http] and [proxy.raw] both on 127.0.0.1. The
// test's namespace is the host (it needs the network guard); a second
// namespace is wired to it by a veth. On the host, the proxy, the raw port
// (tcp and udp) and the app's HTTP host port answer on loopback. From the
// other namespace, through the host's address there, none of them does,
// nor the guest itself.
func TestOnARealMicroVMOnlyTheConfiguredListenersAnswerFromAnotherNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireNetGuard(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb", "nft", "ip")
	if err := network.SetSysctls(network.HostSysctls); err != nil {
		t.Fatal(err)
	}
	dir := daemontest.RunDir(t, "nbe")
	daemontest.GuestImage(t)
	// This test applies the nibrun table in the namespace it shares with
	// other packages' tests: one at a time.
	testenv.LockHostNetwork(t)
	sum, err := daemontest.Tenant("alpnib.dev/examples/apps/echo", filepath.Join(dir, "store", "apps", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	n := slottest.Free(t)
	if err := daemontest.PinSlot(context.Background(), filepath.Join(dir, "state"), "echo", n); err != nil {
		t.Fatal(err)
	}
	hostPort, proxyPort := slot.HostPort(n), 18600+rand.IntN(300)
	guestIP := network.GuestAddr(n).Addr().String()

	// The neighbour: 198.18.K.2, with the host at 198.18.K.1 and a route
	// to the guests' subnet through it.
	k := rand.IntN(250)
	link := fmt.Sprintf("nbx%d", os.Getpid()%100000)
	out := testenv.Netns(t, link+"-o")
	hostAddr, outAddr := fmt.Sprintf("198.18.%d.1", k), fmt.Sprintf("198.18.%d.2", k)
	testenv.IP(t, "link", "add", link, "type", "veth", "peer", "name", "uplink", "netns", out)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
	testenv.IP(t, "addr", "add", hostAddr+"/30", "dev", link)
	testenv.IP(t, "link", "set", link, "up")
	testenv.IP(t, "-n", out, "addr", "add", outAddr+"/30", "dev", "uplink")
	testenv.IP(t, "-n", out, "link", "set", "uplink", "up")
	testenv.IP(t, "-n", out, "route", "add", slot.Subnet.String(), "via", hostAddr)

	cfgPath := qemuConfig(t, dir, fmt.Sprintf("[proxy.http]\nlisten_address = \"127.0.0.1\"\nport = %d\n[proxy.raw]\nlisten_address = \"127.0.0.1\"\nmax_ports_per_guest = 7\n", proxyPort))
	writeDoc(t, dir, map[string]any{
		"hostId":  "exposed",
		"volumes": []any{map[string]any{"volumeId": "echo-data", "appId": "echo", "sizeBytes": 32 << 20, "desiredState": "present"}},
		"instances": []any{map[string]any{
			"appId": "echo", "deploymentId": "echo-1", "volumeId": "echo-data", "desiredState": "running",
			"layers": []any{map[string]any{"kind": "executable", "digest": sum, "objectKey": "apps/echo", "destinationPath": "/app/echo"}},
			"config": map[string]any{
				"httpPort":  8080,
				"command":   map[string]any{"program": "/app/echo", "args": []any{}, "workingDirectory": "/data", "environment": map[string]any{"ECHO_PORT": "7000"}},
				"resources": map[string]any{"vcpuCount": 1, "memoryMib": 128},
				"healthCheck": map[string]any{"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
					"gracePeriodMs": 300000, "healthyThreshold": 1, "unhealthyThreshold": 3},
				"restartPolicy": map[string]any{"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000},
				"ports":         []any{map[string]any{"name": "echo", "guestPort": 7000}},
			},
			"hostnames": []any{map[string]any{"hostname": "echo.example.net", "kind": "platform"}},
		}},
		"checkpoints": []any{}, "exports": []any{},
	})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfgPath, "qemu", 0, false) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		_ = network.Firewall{}.Remove(context.Background())
	})
	reportPath := filepath.Join(dir, "state", daemon.ReportName)
	daemontest.WaitLong(t, "the echo app runs", func() bool {
		b, err := os.ReadFile(reportPath)
		var r reported.HostReportedState
		return err == nil && json.Unmarshal(b, &r) == nil && len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceRunning
	}, reportPath)

	get := "GET /healthz HTTP/1.1\r\nHost: echo.example.net\r\nConnection: close\r\n\r\n"
	answers := func(ns, addr string) (string, error) {
		var got string
		var err error
		// The route may reach the proxy a moment after the report.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			got, _, err = testenv.DialTCP(ns, addr, get)
			if err == nil && strings.HasPrefix(got, "HTTP/1.1 200") || time.Now().After(deadline) {
				return got, err
			}
		}
	}
	at := func(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	t.Run("OnTheHostTheProxyTheRawPortAndTheHostPortAnswerOnLoopback", func(t *testing.T) {
		for _, addr := range []string{at("127.0.0.1", proxyPort), at("127.0.0.1", hostPort)} {
			if got, err := answers("", addr); err != nil || !strings.HasPrefix(got, "HTTP/1.1 200") {
				t.Errorf("%s answered %q, %v; want the app's 200", addr, got, err)
			}
		}
		// The echo app greets, then echoes until the client leaves: the
		// read ends at the dial's deadline, holding the banner.
		if got, _, err := testenv.DialTCP("", at("127.0.0.1", hostPort+1), ""); !strings.HasPrefix(got, "echo\n") {
			t.Errorf("the raw port over tcp said %q, %v; want the echo banner", got, err)
		}
		if got, err := testenv.ExchangeUDP("", at("127.0.0.1", hostPort+1)); err != nil || got != "ping" {
			t.Errorf("the raw port over udp said %q, %v; want the datagram back", got, err)
		}
	})
	t.Run("FromAnotherNamespaceNothingAnswers", func(t *testing.T) {
		for _, addr := range []string{at(hostAddr, proxyPort), at(hostAddr, hostPort), at(hostAddr, hostPort+1), at(guestIP, 8080), at(guestIP, 7000)} {
			testenv.MustBeRefused(t, out, addr)
		}
		for _, addr := range []string{at(hostAddr, hostPort), at(hostAddr, hostPort+1), at(guestIP, 7000)} {
			if got, err := testenv.ExchangeUDP(out, addr); err == nil {
				t.Errorf("udp from another namespace to %s was answered %q", addr, got)
			}
		}
	})
}
