package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm/qemu"
)

// TestARequestToASleepingMicroVMWakesItThroughTheDaemon is the activator
// end to end: the daemon runs examples/apps/counter in a real microVM
// (QEMU, user network, TCG here) behind this proxy; once it sleeps to a
// snapshot, a request by hostname wakes it, and the counter's memory
// shows it was restored, not booted again.
func TestARequestToASleepingMicroVMWakesItThroughTheDaemon(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	ctx := context.Background()
	// QEMU's unix sockets need a short path.
	dir := daemontest.RunDir(t, "nbp")
	img := daemontest.GuestImage(t)

	storeDir := filepath.Join(dir, "store")
	sum, err := daemontest.Tenant("alpnib.dev/examples/apps/counter", filepath.Join(storeDir, "apps", "counter"))
	if err != nil {
		t.Fatal(err)
	}

	// A slot of its own, so that its host port (QEMU's user-network
	// forward) meets no other test's and no outgoing connection's.
	stateDir := filepath.Join(dir, "state")
	if err := daemontest.PinSlot(ctx, stateDir, "counter", slottest.Free(t)); err != nil {
		t.Fatal(err)
	}

	v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap"), UserNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	deps, err := daemontest.FolderDeps(ctx, dir, storeDir)
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Logf: t.Logf, WakeTimeout: 3 * time.Minute})
	deps.VMM, deps.Router, deps.Traffic = v, p, p
	desiredPath := filepath.Join(dir, "control", "desired.json")
	d, err := daemon.Open(ctx, daemon.Config{
		HostID: "proxy-host", DesiredPath: desiredPath, StateDir: stateDir,
		MaxApps: 6600, CapacityMiB: 4096, VCPUs: 2, AgentVersion: "test", GuestImageVersion: img.Version,
		Limits: desired.HostLimits{HTTPProxy: true}, Resync: 500 * time.Millisecond, Logf: t.Logf, UserNetwork: true,
	}, deps)
	if err != nil {
		t.Fatal(err)
	}
	p.SetWaker(d)
	base := "http://" + serve(t, p, ListenConfig{})
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); d.Run(rctx) }()
	defer func() { stop(); <-ran; d.Close() }()

	const host = "counter.apps.example.net"
	reportPath := filepath.Join(stateDir, daemon.ReportName)
	app := desired.DesiredInstance{
		AppId: "counter", DeploymentId: "counter-1", VolumeId: "counter-data", DesiredState: desired.StateOnRequest,
		Layers: []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: desired.Sha256Digest(sum), ObjectKey: "apps/counter", DestinationPath: "/app/counter"}},
		Config: desired.AppConfig{
			HttpPort:  8080,
			Command:   desired.Command{Program: "/app/counter", Args: desired.TenantArguments{}, WorkingDirectory: "/data", Environment: desired.TenantEnvironment{}},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 128},
			HealthCheck: desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/healthz", IntervalMs: 500, TimeoutMs: 5000,
				GracePeriodMs: 300000, HealthyThreshold: 1, UnhealthyThreshold: 3},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 2, InitialBackoffMs: 1000, MaxBackoffMs: 10000, BackoffFactor: 2, ResetAfterMs: 600000},
		},
		Hostnames: []desired.AppHostname{{Hostname: host, Kind: desired.HostnamePlatform}},
	}
	doc := &desired.HostDesiredState{HostId: "proxy-host",
		Volumes:   []desired.DesiredVolume{{VolumeId: "counter-data", AppId: "counter", SizeBytes: 64 << 20, DesiredState: desired.Present}},
		Instances: []desired.DesiredInstance{app}, Checkpoints: []desired.DesiredCheckpoint{}, Exports: []desired.DesiredExport{}}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := desired.Decode(js); err != nil {
		t.Fatalf("the test wrote a document the daemon refuses: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(desiredPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(desiredPath, js, 0o644); err != nil {
		t.Fatal(err)
	}

	routed := func(state route.State) func() bool {
		return func() bool { r, ok := p.table.Load().routes[host]; return ok && r.State == state }
	}
	daemontest.WaitLong(t, "the counter's route up", routed(route.Up), reportPath)
	c := &http.Client{Timeout: 4 * time.Minute}
	var first result
	daemontest.WaitLong(t, "the counter answers through the proxy", func() bool {
		r, err := ask(c, base, host)
		first = r
		return err == nil && r.status == 200
	}, reportPath)
	if !strings.Contains(first.body, "hello from "+host) {
		t.Fatalf("the counter answered %q", first.body)
	}

	sctx, scancel := context.WithTimeout(ctx, 3*time.Minute)
	defer scancel()
	if err := d.Sleep(sctx, "counter"); err != nil {
		t.Fatal(err)
	}
	daemontest.WaitLong(t, "the counter's route sleeping", routed(route.Sleeping), reportPath)

	woke := get(t, c, base, host)
	if woke.status != 200 || !strings.Contains(woke.body, "request #2 since boot") {
		t.Fatalf("after the wake the counter answered %d %q, want request #2 (its memory restored)", woke.status, woke.body)
	}
	if last, busy := p.Activity("counter"); last.IsZero() || busy {
		t.Fatalf("activity after the wake: %v %v", last, busy)
	}
	daemontest.WaitLong(t, "the counter's route up again", routed(route.Up), reportPath)
}
