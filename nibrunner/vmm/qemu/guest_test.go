package qemu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

// These tests boot real guests: QEMU microvm with the guest kernel we build and
// our init, under TCG on the build machines (about 6 s a boot on 2 cores).
// Most use QEMU's user-mode network with a forward on 127.0.0.1, which needs
// no root networking; tap_test.go runs one on its slot's tap inside a
// network namespace of its own.

var (
	imageOnce sync.Once
	imageErr  error
	image     guestimage.Image
)

// testImage builds the guest image once per test binary, in a folder the
// guestimage tests share, so the kernel is downloaded once per machine.
func testImage(t testing.TB) guestimage.Image {
	t.Helper()
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		image, imageErr = guestimage.Build(ctx, testenv.GuestImageDir())
	})
	if imageErr != nil {
		t.Fatalf("build the guest image: %v", imageErr)
	}
	return image
}

// shortTempDir is a temporary folder with a short path: QEMU's unix
// sockets live under it and t.TempDir's paths are too long for them.
func shortTempDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "nbr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	// Registered after the removal, so it runs first: a test that ends
	// any way at all (a Fatal before its deferred Stop, a helper daemon
	// killed mid-start) leaves no QEMU behind its pidfiles.
	t.Cleanup(func() { fake.KillAll(filepath.Join(d, "run")) })
	return d
}

// fixture is one app's files: the counter server and an ext4 volume.
type fixture struct {
	dir, counter, volume string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	d := shortTempDir(t)
	f := fixture{dir: d, counter: filepath.Join(d, "counter"), volume: filepath.Join(d, "vol.ext4")}
	build := exec.Command("go", "build", "-o", f.counter, "./testdata/counter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the counter server: %v\n%s", err, out)
	}
	// The daemon's layer cache packs an executable into an image before a
	// start; the VMM attaches images only.
	if err := layer.Pack(context.Background(), "", f.counter, "/app/counter", filepath.Join(d, "stage"), f.image()); err != nil {
		t.Fatalf("pack the counter server: %v", err)
	}
	mke2fs := testenv.RequireCommand(t, "mke2fs")
	if out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext4", f.volume, "64M").CombinedOutput(); err != nil {
		t.Fatalf("make the volume: %v\n%s", err, out)
	}
	return f
}

// image is the counter server packed at /app/counter.
func (f fixture) image() string { return f.counter + ".sqfs" }

func (f fixture) spec(t testing.TB, app string) vmm.Spec {
	return vmm.Spec{
		AppID: app, DeploymentID: "dep-1", Slot: 3, MemoryMiB: 128, VCPUs: 1,
		Layers:     []vmm.Layer{{Kind: vmm.LayerFilesystem, Digest: "test", Path: f.image()}},
		VolumePath: f.volume,
		Command:    vmm.Command{Program: "/app/counter", WorkingDirectory: "/data", Environment: map[string]string{"GREETING": "hi"}},
		HTTPPort:   8080,
		Restart:    vmm.RestartPolicy{MaxRestarts: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, BackoffFactor: 2, ResetAfter: time.Minute},
		Network:    vmm.Network{HostPort: slot.HostPort(slottest.Free(t))},
		Hostname:   app + ".example.com",
	}
}

func newVMM(t testing.TB, runtime string, logs io.Writer) *VMM {
	t.Helper()
	img := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := New(ctx, Config{
		Image: img, RuntimeDir: filepath.Join(runtime, "run"), SnapshotDir: filepath.Join(runtime, "snap"),
		UserNetwork: true,
		OnMessage: func(app string, m guest.Message) {
			if logs != nil {
				fmt.Fprintf(logs, "%s %s %s%s\n", app, m.Kind, m.Stream, strings.TrimRight(m.Data, "\n"))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// get fetches path from the guest, retrying until it answers or the
// deadline passes.
func get(t testing.TB, endpoint, path string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	// A generous timeout: a retried /count would count twice.
	c := http.Client{Timeout: 15 * time.Second}
	for {
		resp, err := c.Get("http://" + endpoint + path)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return string(b)
			}
			err = fmt.Errorf("%s: %s", resp.Status, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s%s: %v", endpoint, path, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func put(t testing.TB, endpoint, path, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, "http://"+endpoint+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %s %s", path, resp.Status, b)
	}
}

// started starts spec on v and, when the test ends, logs the guest's
// console and the messages in logs if it failed, then stops the guest.
func started(t testing.TB, ctx context.Context, v *VMM, spec vmm.Spec, logs *testenv.SyncBuffer) vmm.Status {
	t.Helper()
	st, err := v.Start(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() && logs != nil {
			t.Logf("console:\n%s\nmessages:\n%s", console(v, spec.AppID), logs.String())
		}
		_ = v.Stop(context.Background(), spec.AppID)
	})
	return st
}

func console(v *VMM, app string) string {
	b, _ := os.ReadFile(v.ConsolePath(app))
	return string(b)
}

func TestAGuestServesHTTPAndKeepsItsFilesAndMemoryAcrossSleepAndWake(t *testing.T) {
	testenv.RequireRoot(t) // the init's chroot and setuid need nothing of the host, but QEMU's drives are root's files
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	spec := f.spec(t, "counter")
	st := started(t, ctx, v, spec, &logs)
	t.Logf("started pid %d under %s", st.PID, v.Version())
	if st.State != vmm.Running || st.Endpoint == "" || st.Restored {
		t.Fatalf("status after start: %+v", st)
	}
	if who := get(t, st.Endpoint, "/whoami", 90*time.Second); who != "65534:65534 /data counter.example.com shm" {
		t.Errorf("the tenant runs as %q, want 65534:65534 in /data with its hostname and a writable /dev/shm", who)
	}
	for i := 1; i <= 2; i++ {
		if got := get(t, st.Endpoint, "/count", 5*time.Second); got != strconv.Itoa(i) {
			t.Fatalf("count %d = %s", i, got)
		}
	}
	put(t, st.Endpoint, "/note", "written before sleep")
	m, err := v.Measure(ctx, spec.AppID)
	if err != nil || m.MemoryTotalBytes < 64<<20 || m.MemoryUsedBytes == 0 || m.MemoryUsedBytes > m.MemoryTotalBytes {
		t.Errorf("measurement %+v, %v", m, err)
	}
	if _, err := v.Request(ctx, spec.AppID, guest.KindFreeze); err != nil {
		t.Errorf("freeze: %v", err)
	}
	if _, err := v.Request(ctx, spec.AppID, guest.KindThaw); err != nil {
		t.Errorf("thaw: %v", err)
	}

	// A sleep refused for lack of disk leaves the guest running.
	realFree := freeBytes
	freeBytes = func(string) (uint64, error) { return 10 << 20, nil }
	err = v.Sleep(ctx, spec.AppID)
	freeBytes = realFree
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("sleep on a full disk: %v, want ErrNoSpace", err)
	}
	if got := get(t, st.Endpoint, "/count", 5*time.Second); got != "3" {
		t.Fatalf("after a refused sleep the count is %s, want 3", got)
	}

	start := time.Now()
	if err := v.Sleep(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	t.Logf("slept in %v", time.Since(start))
	if !v.HasSnapshot(spec.AppID) {
		t.Fatal("no snapshot after sleep")
	}
	// The guest's memory is the tenant's: root alone reads it.
	for p, want := range map[string]os.FileMode{v.snapDir(spec.AppID): 0o750, filepath.Join(v.snapDir(spec.AppID), stateFile): 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %#o", p, fi.Mode(), err, want)
		}
	}
	if list, _ := v.List(ctx); len(list) != 0 {
		t.Fatalf("a sleeping app is still listed: %+v", list)
	}
	if _, err := os.Stat(v.pidfile(spec.AppID)); !os.IsNotExist(err) {
		t.Fatalf("the pidfile outlived the sleep: %v", err)
	}
	if c, err := net.DialTimeout("tcp", st.Endpoint, time.Second); err == nil {
		// QEMU's forward is gone with its process.
		c.Close()
		t.Fatal("something still answers at the sleeping guest's endpoint")
	}

	if stamp, err := readStamp(v.snapDir(spec.AppID)); err == nil {
		t.Logf("state file %d MiB for a %d MiB guest", stamp.StateSize>>20, spec.MemoryMiB)
	}
	start = time.Now()
	st2, err := v.Wake(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, st2.Endpoint, "/count", 30*time.Second); got != "4" {
		t.Fatalf("after wake the count is %s, want 4 (the process kept its memory)", got)
	}
	t.Logf("woke and answered in %v", time.Since(start))
	if !st2.Restored || st2.PID == st.PID {
		t.Fatalf("wake status %+v: want restored, new process", st2)
	}
	if c := console(v, spec.AppID); strings.Contains(c, "nibrun-init: app counter") {
		t.Errorf("the console file still holds the cold boot's output; it is truncated at each start:\n%s", c)
	}
	if got := get(t, st2.Endpoint, "/note", 5*time.Second); got != "written before sleep" {
		t.Fatalf("note after wake = %q", got)
	}
	if v.HasSnapshot(spec.AppID) {
		t.Error("the snapshot was kept after the guest resumed; its memory no longer matches the volume")
	}

	// A stopped guest shuts down cleanly and its data stays on the volume.
	if err := v.Stop(ctx, spec.AppID); err != nil {
		t.Fatal(err)
	}
	if list, _ := v.List(ctx); len(list) != 0 {
		t.Fatalf("a stopped app is still listed: %+v", list)
	}
	if !strings.Contains(logs.String(), "counter listening on 8080") {
		t.Errorf("the tenant's output did not reach the host:\n%s", logs.String())
	}
	if b, err := os.ReadFile(v.TenantLogPath(spec.AppID)); err != nil || !strings.Contains(string(b), " stdout counter listening on 8080\n") {
		t.Errorf("the tenant log file lacks the tenant's output (%v):\n%s", err, b)
	}
	if out, err := exec.Command("debugfs", "-R", "cat /"+guest.VolumeUpperDir+"/data/note", f.volume).Output(); err == nil && string(out) != "written before sleep" {
		t.Errorf("the volume holds %q at data/note", out)
	}
}

// helperEnv makes the test binary a daemon that starts one guest, prints
// its PID and waits to be killed.
const helperEnv = "NIBRUN_QEMU_TEST_HELPER"

func TestHelperStartsAGuestAndWaitsToBeKilled(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("a helper for TestAGuestOutlivesTheDaemonThatStartedItAndIsAdopted")
	}
	f := fixture{dir: dir, counter: filepath.Join(dir, "counter"), volume: filepath.Join(dir, "vol.ext4")}
	v := newVMM(t, dir, nil)
	spec := f.spec(t, "adoptee")
	st, err := v.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("PID %d %s\n", st.PID, st.Endpoint)
	time.Sleep(time.Hour)
}

// killedHelper runs the helper test name in a child process with env, waits
// for the line "<word> PID ENDPOINT" it prints once its guest is up, then
// SIGKILLs it the way a daemon dies, and returns the guest's pid and
// endpoint.
func killedHelper(t *testing.T, name, env, word string) (int, string) {
	t.Helper()
	helper := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v")
	helper.Env = append(os.Environ(), env)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	helper.Stderr = os.Stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	var endpoint string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), word+" %d %s", &pid, &endpoint); err == nil {
			break
		}
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	if pid == 0 {
		t.Fatalf("the helper %s started no guest", name)
	}
	return pid, endpoint
}

func TestAGuestOutlivesTheDaemonThatStartedItAndIsAdopted(t *testing.T) {
	testenv.RequireRoot(t)
	testImage(t)
	f := newFixture(t)
	// The daemon dies without a word.
	pid, endpoint := killedHelper(t, "TestHelperStartsAGuestAndWaitsToBeKilled", helperEnv+"="+f.dir, "PID")

	v := newVMM(t, f.dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer v.Stop(context.Background(), "adoptee")
	list, _ := v.List(ctx)
	if len(list) != 1 || list[0].PID != pid || list[0].State != vmm.Running || list[0].AppID != "adoptee" {
		t.Fatalf("after the daemon's death List = %+v, want adoptee running as pid %d", list, pid)
	}
	get(t, endpoint, "/whoami", 90*time.Second)
	if got := get(t, endpoint, "/count", 5*time.Second); got != "1" {
		t.Fatalf("the adopted guest counts %s", got)
	}
	if _, err := v.Measure(ctx, "adoptee"); err != nil {
		t.Fatalf("the adopted guest's control channel: %v", err)
	}

	// This daemon stops in the middle of a sleep: the guest is paused and
	// no snapshot was stamped. A new VMM in the same process adopts it,
	// superseding the old one, which held QEMU's only QMP connection, and
	// resumes it.
	if _, err := v.guests["adoptee"].qmp.execute(ctx, "stop", nil); err != nil {
		t.Fatal(err)
	}
	old := v
	v = newVMM(t, f.dir, nil)
	defer v.Stop(context.Background(), "adoptee")
	if list, _ := v.List(ctx); len(list) != 1 || list[0].PID != pid || list[0].State != vmm.Running {
		t.Fatalf("adopted beside a VMM holding QMP: %+v, want pid %d running", list, pid)
	}
	og := old.guests["adoptee"]
	og.mu.Lock()
	superseded := og.closed
	og.mu.Unlock()
	if !superseded {
		t.Error("the old VMM still holds the guest's connections")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		q, err := v.guests["adoptee"].monitor()
		if err == nil {
			if st, err := q.status(ctx); err == nil && st == "running" {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest was not attached and resumed: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got := get(t, endpoint, "/count", 10*time.Second); got != "2" {
		t.Fatalf("the twice-adopted guest counts %s, want 2", got)
	}

	// The adopted guest sleeps; a wake for another deployment must not
	// restore its memory but boot the new deployment cold.
	if err := v.Sleep(ctx, "adoptee"); err != nil {
		t.Fatal(err)
	}
	spec := f.spec(t, "adoptee")
	spec.DeploymentID = "dep-2"
	if why := v.WakeMismatch(ctx, spec); !strings.Contains(why, "deployment") {
		t.Errorf("the stamp mismatch is %q, want the deployment", why)
	}
	st, err := v.Wake(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if st.Restored || st.DeploymentID != "dep-2" {
		t.Fatalf("a wake into another deployment gave %+v, want a cold boot of dep-2", st)
	}
	if v.HasSnapshot("adoptee") {
		t.Error("the unusable snapshot was kept")
	}
	get(t, st.Endpoint, "/whoami", 90*time.Second)
	if got := get(t, st.Endpoint, "/count", 5*time.Second); got != "1" {
		t.Fatalf("the cold-booted guest counts %s, want 1 (fresh memory)", got)
	}
	pid = st.PID
	if err := v.Stop(ctx, "adoptee"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.Contains(string(b), "adoptee") {
			t.Fatalf("QEMU pid %d outlived Stop", pid)
		}
	}
}

func TestATenantThatKeepsFailingIsRestartedByThePolicyThenTheGuestEndsWithItsExitCode(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := f.spec(t, "failing")
	spec.Command.Environment = map[string]string{"EXIT_WITH": "3"}
	spec.Restart = vmm.RestartPolicy{MaxRestarts: 2, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, BackoffFactor: 2, ResetAfter: time.Minute}
	if _, err := v.Start(ctx, spec); err != nil {
		t.Fatal(err)
	}
	defer v.Stop(context.Background(), spec.AppID)
	var st vmm.Status
	for {
		list, _ := v.List(ctx)
		if len(list) == 1 && list[0].State == vmm.Exited {
			st = list[0]
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the guest did not end; console:\n%s\nmessages:\n%s", console(v, spec.AppID), logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("exit code %v, want 3; messages:\n%s", st.ExitCode, logs.String())
	}
	if !strings.Contains(st.Message, "out of restarts") {
		t.Errorf("the exited guest's message %q does not say it ran out of restarts", st.Message)
	}
	if n := strings.Count(logs.String(), "failing started"); n != 3 {
		t.Errorf("the tenant started %d times, want 3 (first run + 2 restarts):\n%s", n, logs.String())
	}
}
