package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/export"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/vmm/qemu"
	"alpnib.dev/nibrunner/volume"
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
	dir, err := os.MkdirTemp("", "nbp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(func() { fake.KillAll(filepath.Join(dir, "run")) })
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// The folder the other QEMU tests build into: the kernel is fetched
	// once per machine.
	img, err := guestimage.Build(bctx, testenv.GuestImageDir())
	if err != nil {
		t.Fatalf("build the guest image: %v", err)
	}

	storeDir := filepath.Join(dir, "store")
	bin := filepath.Join(storeDir, "apps", "counter")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "alpnib.dev/examples/apps/counter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the counter: %v\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)

	// A slot of its own, so its host port (QEMU's user-network forward)
	// meets no other test's: 1000–1399 are ports 29000–32199, under the
	// kernel's ephemeral range and below the daemon's QEMU test's slots.
	stateDir := filepath.Join(dir, "state")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	slots, err := db.Open(ctx, filepath.Join(stateDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := slots.PutSlots(ctx, map[string]int{"counter": 1000 + rand.IntN(400)}); err != nil {
		t.Fatal(err)
	}
	slots.Close()

	v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap"), UserNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	st, err := store.NewDir(storeDir)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := layer.NewCache(filepath.Join(dir, "cache"), st)
	if err != nil {
		t.Fatal(err)
	}
	vols, err := volume.NewLocal(filepath.Join(dir, "volumes"), st)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.Open(ctx, checkpoint.Options{Dir: filepath.Join(dir, "checkpoints"), Objects: st, Prefix: "checkpoints/"})
	if err != nil {
		t.Fatal(err)
	}
	exps, err := export.Open(ctx, export.Options{Objects: st, StagingDir: filepath.Join(dir, "export-staging"), RecordDir: filepath.Join(dir, "exports")})
	if err != nil {
		t.Fatal(err)
	}
	p := New(Options{Logf: t.Logf, WakeTimeout: 3 * time.Minute})
	desiredPath := filepath.Join(dir, "control", "desired.json")
	d, err := daemon.Open(ctx, daemon.Config{
		HostID: "proxy-host", DesiredPath: desiredPath, StateDir: stateDir,
		MaxApps: 6600, CapacityMiB: 4096, VCPUs: 2, AgentVersion: "test", GuestImageVersion: img.Version,
		Limits: desired.HostLimits{HTTPProxy: true}, Resync: 500 * time.Millisecond, Logf: t.Logf, UserNetwork: true,
	}, daemon.Deps{VMM: v, Layers: cache, Volumes: daemon.LocalVolumes{Local: vols},
		Checkpoints: cps, Exports: exps, Router: p, Traffic: p})
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
		Layers: []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: desired.Sha256Digest(hex.EncodeToString(sum[:])), ObjectKey: "apps/counter", DestinationPath: "/app/counter"}},
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
	waitLong(t, "the counter's route up", routed(route.Up), reportPath)
	c := &http.Client{Timeout: 4 * time.Minute}
	var first result
	waitLong(t, "the counter answers through the proxy", func() bool {
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
	waitLong(t, "the counter's route sleeping", routed(route.Sleeping), reportPath)

	woke := get(t, c, base, host)
	if woke.status != 200 || !strings.Contains(woke.body, "request #2 since boot") {
		t.Fatalf("after the wake the counter answered %d %q, want request #2 (its memory restored)", woke.status, woke.body)
	}
	if last, busy := p.Activity("counter"); last.IsZero() || busy {
		t.Fatalf("activity after the wake: %v %v", last, busy)
	}
	waitLong(t, "the counter's route up again", routed(route.Up), reportPath)
}

// waitLong polls cond for up to 5 minutes (a boot under TCG on a busy
// machine).
func waitLong(t *testing.T, what string, cond func() bool, report string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(report)
			t.Fatalf("timed out waiting for %s; reported.json:\n%s", what, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
