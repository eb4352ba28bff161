package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/vmm/qemu"
	"alpnib.dev/nibrunner/volume"
)

// TestTheLoopRunsARealMicroVMAndAdoptsItAfterARestart drives the real
// VMM: the app is a Go program as an executable layer on an ext4 volume,
// booted by QEMU (TCG here), health-checked over QEMU's user network, and
// adopted by a second daemon without a restart.
func TestTheLoopRunsARealMicroVMAndAdoptsItAfterARestart(t *testing.T) {
	dir, img := qemuTestDir(t)
	ctx := context.Background()

	storeDir := filepath.Join(dir, "store")
	os.MkdirAll(filepath.Join(storeDir, "apps"), 0o755)
	build := exec.Command("go", "build", "-o", filepath.Join(storeDir, "apps", "hello"), "./testdata/hello")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tenant: %v\n%s", err, out)
	}
	bin, _ := os.ReadFile(filepath.Join(storeDir, "apps", "hello"))
	sum := sha256.Sum256(bin)

	stateDir := filepath.Join(dir, "state")
	os.MkdirAll(stateDir, 0o755)
	// Pin the app to a slot whose host port (QEMU's user-network forward)
	// no other test and no outgoing connection uses.
	pinned := slottest.Free(t)
	store0, err := db.Open(ctx, filepath.Join(stateDir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := store0.PutSlots(ctx, map[string]int{"hello": pinned}); err != nil {
		t.Fatal(err)
	}
	store0.Close()

	h := &host{dir: dir}
	open := func() (*Daemon, *qemu.VMM) {
		d, v, err := openQEMUDaemon(ctx, dir, img, h.clock(), t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		return d, v
	}
	// run runs d until the returned stop, or until the test ends however
	// it ends: a daemon left running after a Fatal would boot the guest
	// again behind the cleanup that kills it, and log into a finished test.
	run := func(d *Daemon) func() {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); d.Run(rctx) }()
		var once sync.Once
		stop := func() { once.Do(func() { cancel(); <-done; d.Close() }) }
		t.Cleanup(stop)
		return stop
	}

	app := desired.DesiredInstance{
		AppId: "hello", DeploymentId: "hello-1", VolumeId: "hello-data", DesiredState: desired.StateRunning,
		Layers: []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: desired.Sha256Digest(hex.EncodeToString(sum[:])), ObjectKey: "apps/hello", DestinationPath: "/app/hello"}},
		Config: desired.AppConfig{
			HttpPort:  8080,
			Command:   desired.Command{Program: "/app/hello", Args: desired.TenantArguments{}, WorkingDirectory: "/data", Environment: desired.TenantEnvironment{}},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 128},
			HealthCheck: desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/", IntervalMs: 1000, TimeoutMs: 5000,
				GracePeriodMs: 300000, HealthyThreshold: 1, UnhealthyThreshold: 3},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 2, InitialBackoffMs: 1000, MaxBackoffMs: 10000, BackoffFactor: 2, ResetAfterMs: 600000},
		},
		Hostnames: []desired.AppHostname{{Hostname: "hello.apps.example.net", Kind: desired.HostnamePlatform}},
	}
	d1 := doc(app)
	d1.Volumes[0].SizeBytes = 64 << 20
	h.write(t, d1)

	d, v := open()
	stop := run(d)
	waitLong := func(what string, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
		t.Helper()
		return h.waitLong(t, what, cond, func() string { return consoleOf(v, "hello") })
	}
	r := waitLong("hello running", allIn(reported.InstanceRunning, "hello"))
	if in := instance(r, "hello"); int(in.HostPort) != 21000+8*pinned || r.Versions.Vmm == "fake" {
		t.Fatalf("report: %+v", r)
	}
	guests, _ := v.List(ctx)
	if len(guests) != 1 {
		t.Fatalf("guests %+v", guests)
	}
	resp, err := http.Get("http://" + guests[0].Endpoint + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "hello from hello.apps.example.net") {
		t.Fatalf("the guest answered %q", body)
	}

	// On request and idle past its timeout, it sleeps (a QEMU snapshot);
	// a wake restores it and it answers again.
	app.DesiredState = desired.StateOnRequest
	d2 := doc(app)
	d2.Volumes[0].SizeBytes = 64 << 20
	h.write(t, d2)
	h.offset.Store(int64(10 * time.Minute))
	waitLong("hello asleep", allIn(reported.InstanceIdle, "hello"))
	if l, _ := v.List(ctx); len(l) != 0 {
		t.Fatalf("a sleeping app has a guest: %+v", l)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	if err := d.Wake(wctx, "hello"); err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, consoleOf(v, "hello"))
	}
	woke, _ := v.List(ctx)
	if len(woke) != 1 || !woke[0].Restored {
		t.Fatalf("the wake did not restore the snapshot: %+v", woke)
	}
	if resp, err := http.Get("http://" + woke[0].Endpoint + "/"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	r = waitLong("hello awake", allIn(reported.InstanceRunning, "hello"))
	if instance(r, "hello").RestartCount != 0 {
		t.Fatal("a wake counted as a restart")
	}

	// A new daemon (and VMM) adopts the microVM: same PID, no restart.
	stop()
	v.Close()
	d, v = open()
	run(d)
	r = waitLong("hello adopted", allIn(reported.InstanceRunning, "hello"))
	if instance(r, "hello").DeploymentId != "hello-1" {
		t.Fatalf("report %+v", r)
	}
	again, _ := v.List(ctx)
	if len(again) != 1 || again[0].PID != woke[0].PID || instance(r, "hello").RestartCount != 0 {
		t.Fatalf("not adopted: before %+v after %+v", woke, again)
	}

	// The adopted microVM sleeps and wakes like one this daemon started.
	h.offset.Store(int64(20 * time.Minute))
	waitLong("the adopted hello asleep", allIn(reported.InstanceIdle, "hello"))
	if err := d.Wake(wctx, "hello"); err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, consoleOf(v, "hello"))
	}
	if l, _ := v.List(ctx); len(l) != 1 || !l[0].Restored {
		t.Fatalf("the adopted guest's wake did not restore: %+v", l)
	}
}

// qemuTestDir makes the folder of a test on the real VMM (short: QEMU's
// unix sockets live under it) and builds the guest image. Whatever happens
// to the test, no microVM under the folder outlives it (guests outlive
// their daemon by design, so only their pidfiles know them all).
func qemuTestDir(t *testing.T) (string, guestimage.Image) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	dir, err := os.MkdirTemp("", "nbd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// Registered after the removal, so it runs first.
	t.Cleanup(func() { fake.KillAll(filepath.Join(dir, "run")) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := guestimage.Build(ctx, qemuGuestImageDir())
	if err != nil {
		t.Fatalf("build the guest image: %v", err)
	}
	return dir, img
}

// openQEMUDaemon opens a daemon on dir with the real adapters: the QEMU
// VMM on user-mode networking, the layer cache and ext4 volumes over the
// folder store dir/store, and checkpoints and exports into it too.
func openQEMUDaemon(ctx context.Context, dir string, img guestimage.Image, clk clock.Clock, logf func(string, ...any)) (*Daemon, *qemu.VMM, error) {
	return openQEMUDaemonWith(ctx, dir, img, clk, logf, nil, nil)
}

// openQEMUDaemonWith is openQEMUDaemon with the checkpoint store and export
// writer given (nil: over the folder store).
func openQEMUDaemonWith(ctx context.Context, dir string, img guestimage.Image, clk clock.Clock, logf func(string, ...any), cps Checkpoints, exps Exports) (*Daemon, *qemu.VMM, error) {
	v, err := qemu.New(ctx, qemu.Config{Image: img, RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap"), UserNetwork: true})
	if err != nil {
		return nil, nil, err
	}
	st, err := store.NewDir(filepath.Join(dir, "store"))
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	cache, err := layer.NewCache(filepath.Join(dir, "cache"), st)
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	vols, err := volume.NewLocal(filepath.Join(dir, "volumes"), st)
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	if cps == nil || exps == nil {
		fcps, fexps, err := folderBackground(dir)
		if err != nil {
			v.Close()
			return nil, nil, err
		}
		cps, exps = fcps, fexps
	}
	d, err := Open(ctx, Config{
		HostID: "qemu-host", DesiredPath: filepath.Join(dir, "control", "desired.json"), StateDir: filepath.Join(dir, "state"),
		MaxApps: 5566, CapacityMiB: 4096, VCPUs: 2, AgentVersion: "test", GuestImageVersion: img.Version,
		Limits: desired.HostLimits{HTTPProxy: true}, Resync: 500 * time.Millisecond, Logf: logf, UserNetwork: true, Clock: clk,
	}, Deps{VMM: v, Layers: cache, Volumes: vols, Checkpoints: cps, Exports: exps})
	if err != nil {
		v.Close()
		return nil, nil, err
	}
	return d, v, nil
}

// waitLong polls reported.json until cond holds, for as long as a TCG
// boot on a loaded machine may take, and shows the guest's console if it
// never does.
func (h *host) waitLong(t *testing.T, what string, cond func(*reported.HostReportedState) bool, console func() string) *reported.HostReportedState {
	t.Helper()
	var last *reported.HostReportedState
	if h.until(t, 5*time.Minute, func() bool { last = h.readReport(t); return last != nil && cond(last) }) {
		return last
	}
	b, _ := os.ReadFile(h.reportPath())
	t.Fatalf("timed out waiting for %s:\n%s\nconsole:\n%s", what, b, console())
	return nil
}

func consoleOf(v *qemu.VMM, app string) string {
	b, _ := os.ReadFile(v.ConsolePath(app))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
