package raw

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm/qemu"
)

// TestTheDaemonWakesAnAppThroughItsRawPortsOverTCPAndUDP is the relay
// end to end, as nibrunnerd serve runs it: the daemon runs
// examples/apps/echo as an on-request app in a real microVM (QEMU, TCG
// here) on its tap, behind the nibrun table, with the relay publishing its
// raw port on 127.0.0.1. The port carries tcp and udp; once the daemon has
// put the app to sleep, a TCP connection wakes it through the daemon, and
// after a second sleep a UDP datagram does. The guest resolves a name
// through the name server it was given, on its tap's host address, which
// the table lets it reach. It needs the network guard: the taps and the
// table are made in the test's namespace.
func TestTheDaemonWakesAnAppThroughItsRawPortsOverTCPAndUDP(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireNetGuard(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb", "nft")
	ctx := context.Background()
	dir := daemontest.RunDir(t, "nbd")
	if err := network.SetSysctls(network.HostSysctls); err != nil {
		t.Fatal(err)
	}
	img := daemontest.GuestImage(t)
	// This test applies the nibrun table in the namespace it shares with
	// other packages' tests: one at a time.
	testenv.LockHostNetwork(t)
	storeDir := filepath.Join(dir, "store")
	sum, err := daemontest.Tenant("alpnib.dev/examples/apps/echo", filepath.Join(storeDir, "apps", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, "state")
	n := slottest.Free(t)
	if err := daemontest.PinSlot(ctx, stateDir, "echo", n); err != nil {
		t.Fatal(err)
	}
	hostIP, guestIP := network.HostAddr(n).Addr(), network.GuestAddr(n).Addr()

	v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap")})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	deps, err := daemontest.FolderDeps(ctx, dir, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	relay := newRelay(t, Options{WakeTimeout: 3 * time.Minute})
	dns := []netip.Addr{hostIP}
	deps.VMM, deps.Router, deps.Ports, deps.Traffic = v, daemon.NoRouter{}, relay, relay
	deps.Network = network.Host{DNS: dns}
	desiredPath := filepath.Join(dir, "control", "desired.json")
	d, err := daemon.Open(ctx, daemon.Config{
		HostID: "raw-host", DesiredPath: desiredPath, StateDir: stateDir,
		MaxApps: 6600, CapacityMiB: 4096, VCPUs: 2, AgentVersion: "test", GuestImageVersion: img.Version,
		Limits: desired.HostLimits{RawProxy: true, MaxPortsPerGuest: 7}, Resync: 500 * time.Millisecond, Logf: t.Logf, DNS: dns,
	}, deps)
	if err != nil {
		t.Fatal(err)
	}
	relay.SetWaker(d)
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); d.Run(rctx) }()
	defer func() { stop(); <-ran; d.Close(); network.Firewall{}.Remove(context.Background()) }()

	const echoPort = 7000
	app := desired.DesiredInstance{
		AppId: "echo", DeploymentId: "echo-1", VolumeId: "echo-data", DesiredState: desired.StateOnRequest,
		Layers: []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: desired.Sha256Digest(sum), ObjectKey: "apps/echo", DestinationPath: "/app/echo"}},
		Config: desired.AppConfig{
			HttpPort: 8080,
			Command: desired.Command{Program: "/app/echo", Args: desired.TenantArguments{}, WorkingDirectory: "/data",
				Environment: desired.TenantEnvironment{"ECHO_PORT": desired.TenantValue(strconv.Itoa(echoPort))}},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 128},
			HealthCheck: desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/healthz", IntervalMs: 500, TimeoutMs: 5000,
				GracePeriodMs: 300000, HealthyThreshold: 1, UnhealthyThreshold: 3},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 2, InitialBackoffMs: 1000, MaxBackoffMs: 10000, BackoffFactor: 2, ResetAfterMs: 600000},
			Ports:         []desired.InstancePort{{Name: "echo", GuestPort: echoPort}},
		},
		Hostnames: []desired.AppHostname{},
	}
	doc := &desired.HostDesiredState{HostId: "raw-host",
		Volumes:   []desired.DesiredVolume{{VolumeId: "echo-data", AppId: "echo", SizeBytes: 32 << 20, DesiredState: desired.Present}},
		Instances: []desired.DesiredInstance{app}, Checkpoints: []desired.DesiredCheckpoint{}, Exports: []desired.DesiredExport{}}
	js, _ := json.Marshal(doc)
	if _, err := desired.Decode(js); err != nil {
		t.Fatalf("the test wrote a document the daemon refuses: %v", err)
	}
	os.MkdirAll(filepath.Dir(desiredPath), 0o755)
	if err := atomicfile.WriteFile(desiredPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(stateDir, daemon.ReportName)
	state := func(want reported.InstanceState) func() bool {
		return func() bool {
			b, err := os.ReadFile(reportPath)
			var r reported.HostReportedState
			if err != nil || json.Unmarshal(b, &r) != nil {
				return false
			}
			return len(r.Instances) == 1 && r.Instances[0].State == want
		}
	}
	daemontest.WaitLong(t, "the echo app runs", state(reported.InstanceRunning), reportPath)
	relayAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(slot.HostPort(n)+1))

	t.Run("TheRawPortCarriesTCPAndUDP", func(t *testing.T) {
		bannerThenEcho(t, relayAddr, "over tcp\n")
		echoOverUDP(t, relayAddr, "over udp")
	})
	t.Run("TheGuestResolvesThroughItsNameServerPastTheFence", func(t *testing.T) {
		serveDNS(t, netip.AddrPortFrom(hostIP, 53), "echo.test.", netip.MustParseAddr("192.0.2.77"))
		if got := getBody(t, "http://"+netip.AddrPortFrom(guestIP, 8080).String()+"/resolve?name=echo.test"); got != "192.0.2.77\n" {
			t.Fatalf("the guest resolved echo.test to %q", got)
		}
	})
	sleep := func(t *testing.T) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
		defer scancel()
		if err := d.Sleep(sctx, "echo"); err != nil {
			t.Fatal(err)
		}
		daemontest.WaitLong(t, "the echo app sleeps", state(reported.InstanceIdle), reportPath)
	}
	t.Run("ATCPConnectionWakesTheSleepingApp", func(t *testing.T) {
		sleep(t)
		bannerThenEcho(t, relayAddr, "woken over tcp\n")
		daemontest.WaitLong(t, "the echo app runs again", state(reported.InstanceRunning), reportPath)
	})
	t.Run("AUDPDatagramWakesTheSleepingApp", func(t *testing.T) {
		sleep(t)
		echoOverUDP(t, relayAddr, "woken over udp")
		daemontest.WaitLong(t, "the echo app runs again", state(reported.InstanceRunning), reportPath)
	})
}
