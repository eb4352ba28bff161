package daemon

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot/slottest"
)

// qemuGuestImageDir is the folder the guestimage, qemu and daemon tests
// all build the guest image into, so the kernel is fetched once per
// machine.
func qemuGuestImageDir() string { return testenv.GuestImageDir() }

// qemuDaemonEnv names the folder of the real-QEMU daemon the helper below
// runs as a child process.
const qemuDaemonEnv = "NIBRUN_TEST_QEMU_DAEMON_DIR"

// TestHelperRunsTheDaemonOnRealQEMU is not a test: it is the daemon, on
// the real QEMU VMM with the real layer cache, volumes and control socket,
// run as a child process by the test below so that it can be SIGKILLed.
func TestHelperRunsTheDaemonOnRealQEMU(t *testing.T) {
	dir := os.Getenv(qemuDaemonEnv)
	if dir == "" {
		t.Skip("only run as the daemon child of TestThroughTheDaemonARealGuest…")
	}
	if err := runQEMUDaemon(dir); err != nil {
		fmt.Fprintln(os.Stderr, "qemu daemon:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runQEMUDaemon(dir string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	img, err := guestimage.Load(qemuGuestImageDir())
	if err != nil {
		return fmt.Errorf("load the guest image: %w", err)
	}
	logf := func(f string, a ...any) { fmt.Fprintf(os.Stderr, "daemon: "+f+"\n", a...) }
	d, v, err := openQEMUDaemon(ctx, dir, img, nil, logf)
	if err != nil {
		return err
	}
	srv := &control.Server{Apps: d, ReportPath: filepath.Join(dir, "state", ReportName), Conflicts: []error{ErrCannotSleep, route.ErrNotRunning}}
	go func() {
		if err := srv.ListenAndServe(ctx, control.SocketPath(filepath.Join(dir, "run"))); err != nil {
			logf("control socket: %v", err)
		}
	}()
	err = d.Run(ctx)
	d.Close()
	v.Close()
	return err
}

// startQEMUDaemon runs the helper above as a child process on dir.
func startQEMUDaemon(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	return startSelf(t, "^TestHelperRunsTheDaemonOnRealQEMU$", qemuDaemonEnv+"="+dir)
}

// putObject stores b under key in the folder store at dir and returns its
// digest.
func putObject(t *testing.T, dir, key string, b []byte) desired.Sha256Digest {
	t.Helper()
	p := filepath.Join(dir, "store", filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return desired.Sha256Digest(hex.EncodeToString(sum[:]))
}

func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipWithSymlink(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "escape", Method: zip.Store}
	h.SetMode(os.ModeSymlink | 0o777)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("/etc/shadow"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestThroughTheDaemonARealGuestServesItsSeededVolumeKeepsItsStateAcrossSleepAndWakeAndOutlivesASIGKILL
// is the CI lane, end to end through a daemon process: a static
// Go HTTP server built here, shipped as an executable layer over the base
// image, on a volume seeded from a tar.gz, answers at its host port; it
// writes a file, sleeps and wakes (over the control socket) with the file
// and its process (same token, counter still counting) intact; the daemon
// SIGKILLed and started again adopts the microVM (same QEMU pid). Beside
// it, a filesystem layer with bad magic, a layer whose digest does not
// match and a volume seeded from a zip holding a symlink each fail their
// own instance or volume in reported.json, saying why.
func TestThroughTheDaemonARealGuestServesItsSeededVolumeKeepsItsStateAcrossSleepAndWakeAndOutlivesASIGKILL(t *testing.T) {
	dir, img := qemuTestDir(t)
	ctx := context.Background()
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()

	// The tenant: a static binary, an executable layer at /app/notes.
	bin := filepath.Join(dir, "notes")
	build := exec.CommandContext(bctx, "go", "build", "-o", bin, "./testdata/notes")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tenant: %v\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	exeDigest := putObject(t, dir, "apps/notes", exe)
	seed := tarGz(t, map[string]string{"greeting.txt": "hello from the seed\n"})
	seedDigest := putObject(t, dir, "seeds/site.tar.gz", seed)
	badMagic := putObject(t, dir, "layers/bad-magic.img", append([]byte("NOTAFS"), make([]byte, 4090)...))
	putObject(t, dir, "layers/changed.squashfs", append([]byte("hsqs"), make([]byte, 4092)...))
	zipDigest := putObject(t, dir, "seeds/symlink.zip", zipWithSymlink(t))

	// Pin the app to a slot whose host port (QEMU's user-network forward)
	// no other test and no outgoing connection uses.
	pinned := slottest.Free(t)
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	stateDb, err := db.Open(ctx, filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := stateDb.PutSlots(ctx, map[string]int{"notes": pinned}); err != nil {
		t.Fatal(err)
	}
	stateDb.Close()

	h := &host{dir: dir}
	notes := h.app("notes", "notes-1")
	notes.Layers = []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: exeDigest, ObjectKey: "apps/notes", DestinationPath: "/app/notes"}}
	notes.Config.Command.Program = "/app/notes"
	// Over HTTP: on QEMU's user network a TCP connect to the host port is
	// accepted by QEMU itself whether or not the tenant listens yet, so
	// only an HTTP answer says the tenant is up.
	notes.Config.HealthCheck = desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/greeting.txt", IntervalMs: 1000, TimeoutMs: 5000,
		GracePeriodMs: 300000, HealthyThreshold: 1, UnhealthyThreshold: 3}
	bad := h.app("badmagic", "badmagic-1")
	bad.Layers = []desired.DesiredLayer{{Kind: desired.LayerFilesystem, Digest: badMagic, ObjectKey: "layers/bad-magic.img"}}
	mismatch := h.app("mismatch", "mismatch-1")
	mismatch.Layers = []desired.DesiredLayer{{Kind: desired.LayerFilesystem, Digest: desired.Sha256Digest(strings.Repeat("ab", 32)), ObjectKey: "layers/changed.squashfs"}}
	zipper := h.app("zipper", "zipper-1")
	zipper.Layers = notes.Layers
	d := doc(notes, bad, mismatch, zipper)
	d.HostId = "qemu-host"
	d.Volumes[0].SizeBytes = 64 << 20
	d.Volumes[0].InitialContents = &desired.InitialContents{Digest: seedDigest, ObjectKey: "seeds/site.tar.gz", DestinationPath: "/data"}
	d.Volumes[3].SizeBytes = 16 << 20
	d.Volumes[3].InitialContents = &desired.InitialContents{Digest: zipDigest, ObjectKey: "seeds/symlink.zip", DestinationPath: "/data"}
	h.write(t, d)

	daemon1 := startQEMUDaemon(t, dir)
	waitLong := func(what string, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
		t.Helper()
		return h.waitLong(t, what, cond, func() string {
			b, _ := os.ReadFile(filepath.Join(dir, "run", "notes", "console.log"))
			return string(b)
		})
	}
	r := waitLong("notes running and the three broken ones failed", func(r *reported.HostReportedState) bool {
		if in := instance(r, "notes"); in == nil || in.State != reported.InstanceRunning {
			return false
		}
		for _, app := range []string{"badmagic", "mismatch"} {
			if in := instance(r, app); in == nil || in.State != reported.InstanceFailed {
				return false
			}
		}
		v := volumeOf(r, "zipper-data")
		return v != nil && v.State == reported.VolumeFailed
	})
	if r.Versions.GuestImage != img.Version || !strings.HasPrefix(r.Versions.Vmm, "qemu-") {
		t.Errorf("reported versions %+v, want guest image %s on QEMU", r.Versions, img.Version)
	}
	for _, c := range []struct{ what, message, want string }{
		{"the bad-magic layer's instance", instance(r, "badmagic").Message, "not a squashfs or ext4 image"},
		{"the mismatched layer's instance", instance(r, "mismatch").Message, "digest"},
		{"the zip's volume", volumeOf(r, "zipper-data").Message, "symlink"},
	} {
		if !strings.Contains(strings.ToLower(c.message), c.want) {
			t.Errorf("%s failed saying %q, which does not mention %q", c.what, c.message, c.want)
		}
	}
	if in := instance(r, "zipper"); in.State == reported.InstanceRunning {
		t.Errorf("zipper runs without its volume: %+v", in)
	}
	if n := len(guestPIDs(t, h)); n != 1 {
		t.Fatalf("%d microVMs for one bootable app", n)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", instance(r, "notes").HostPort)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %s", path, resp.Status, b)
		}
		return string(b)
	}
	if got := get("/greeting.txt"); got != "hello from the seed\n" {
		t.Fatalf("the seeded file reads %q", got)
	}
	req, _ := http.NewRequest(http.MethodPut, base+"/_/files/note.txt", strings.NewReader("written before sleeping\n"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("write a file in the guest: %v %+v", err, resp)
	}
	token, _, _ := strings.Cut(get("/_/token"), " ")

	// Sleep and wake over the control socket, as an operator (or the
	// proxy) would.
	notes.DesiredState = desired.StateOnRequest
	d.Instances[0] = notes
	h.write(t, d)
	ctl := control.NewClient(control.SocketPath(filepath.Join(dir, "run")))
	h.deadlineWait(t, func() bool {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		return ctl.Sleep(cctx, "notes") == nil
	})
	waitLong("notes asleep", allIn(reported.InstanceIdle, "notes"))
	if n := len(guestPIDs(t, h)); n != 0 {
		t.Fatalf("a sleeping app still has %d microVMs", n)
	}
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer wcancel()
	if err := ctl.Wake(wctx, "notes"); err != nil {
		t.Fatalf("wake: %v", err)
	}
	if got := get("/note.txt"); got != "written before sleeping\n" {
		t.Fatalf("after the wake the written file reads %q", got)
	}
	if tok, hits, _ := strings.Cut(strings.TrimSpace(get("/_/token")), " "); tok != token || hits != "2" {
		t.Fatalf("after the wake the tenant answers token %s after %s requests; before it was %s after 1: a new process, not the same one", tok, hits, token)
	}
	r = waitLong("notes awake", allIn(reported.InstanceRunning, "notes"))
	if instance(r, "notes").RestartCount != 0 {
		t.Fatal("a wake counted as a restart")
	}

	// SIGKILL the daemon process; a new one adopts the microVM.
	before := guestPIDs(t, h)
	if err := daemon1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	daemon1.Wait()
	os.Remove(h.reportPath())
	startQEMUDaemon(t, dir)
	r = waitLong("notes adopted", allIn(reported.InstanceRunning, "notes"))
	after := guestPIDs(t, h)
	if len(after) != 1 || after["notes"] != before["notes"] || instance(r, "notes").RestartCount != 0 {
		t.Fatalf("not adopted: QEMU pids before %v after %v, report %+v", before, after, instance(r, "notes"))
	}
	if tok, hits, _ := strings.Cut(strings.TrimSpace(get("/_/token")), " "); tok != token || hits != "3" {
		t.Fatalf("after the adoption the tenant answers token %s after %s requests, was %s after 2", tok, hits, token)
	}
	if instance(r, "badmagic").State != reported.InstanceFailed || volumeOf(r, "zipper-data").State != reported.VolumeFailed {
		b, _ := json.MarshalIndent(r, "", "  ")
		t.Fatalf("the new daemon forgot the failures:\n%s", b)
	}
}
