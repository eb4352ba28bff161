package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot/slottest"
)

// toolsLayer packs the host's static busybox into a squashfs at dst, each
// of its applets a link in /bin, as a user adds a shell and tar to an
// app's root (docs/debugging.md): the host injects none. It returns the
// image's sha256.
func toolsLayer(t testing.TB, dst string) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(t.TempDir(), "tools")
	if err := os.MkdirAll(filepath.Join(tree, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "bin", "busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			os.Symlink("busybox", filepath.Join(tree, "bin", applet))
		}
	}
	// serve sets a umask of 077 in this process; the tenant (65534) must
	// reach the tools.
	for _, p := range []string{tree, filepath.Join(tree, "bin"), filepath.Join(tree, "bin", "busybox")} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if out, err := exec.Command("mksquashfs", tree, dst, "-all-root", "-noappend", "-quiet").CombinedOutput(); err != nil {
		t.Fatalf("mksquashfs: %v\n%s", err, out)
	}
	img, _ := os.ReadFile(dst)
	sum := sha256.Sum256(img)
	return hex.EncodeToString(sum[:])
}

// watched is a writer whose content a test waits on.
type watched struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func newWatched() *watched { return &watched{more: make(chan struct{}, 1)} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	select {
	case w.more <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// await waits until the output holds want, or the session ends.
func (w *watched) await(t *testing.T, want string, ended <-chan struct{}) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for !strings.Contains(w.String(), want) {
		select {
		case <-w.more:
		case <-ended:
			if !strings.Contains(w.String(), want) {
				t.Fatalf("the session ended before its output held %q: %q", want, w.String())
			}
		case <-timeout:
			t.Fatalf("the output never held %q: %q", want, w.String())
		}
	}
}

// execGuest is nibrunnerd serve on QEMU (TCG here) with the counter app
// running on-request over a layer with busybox (toolsLayer), until tb ends.
// It returns the host's folder and configuration, the document and its
// instance (to change and write again), and the daemon's events.
func execGuest(t testing.TB) (root, cfgPath string, doc, in map[string]any, evs <-chan control.Event) {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb", "busybox")
	root = daemontest.RunDir(t, "nbx")
	daemontest.GuestImage(t)
	cfgPath = qemuConfig(t, root, "")
	counter, err := daemontest.Tenant("alpnib.dev/examples/apps/counter", filepath.Join(root, "store", "apps", "counter"))
	if err != nil {
		t.Fatal(err)
	}
	tools := toolsLayer(t, filepath.Join(root, "store", "layers", "tools.squashfs"))
	if err := daemontest.PinSlot(context.Background(), filepath.Join(root, "state"), "counter", slottest.Free(t)); err != nil {
		t.Fatal(err)
	}
	in = map[string]any{
		"appId": "counter", "deploymentId": "counter-1", "volumeId": "counter-data", "desiredState": "on-request", "idleTimeoutMs": 600000,
		"layers": []any{
			map[string]any{"kind": "filesystem", "digest": tools, "objectKey": "layers/tools.squashfs"},
			map[string]any{"kind": "executable", "digest": counter, "objectKey": "apps/counter", "destinationPath": "/app/counter"},
		},
		"config": map[string]any{
			"httpPort":  8080,
			"command":   map[string]any{"program": "/app/counter", "args": []any{}, "workingDirectory": "/data", "environment": map[string]any{"COUNTER_NOTE": "from-the-app"}},
			"resources": map[string]any{"vcpuCount": 1, "memoryMib": 128},
			"healthCheck": map[string]any{"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
				"gracePeriodMs": 300000, "healthyThreshold": 1, "unhealthyThreshold": 3},
			"restartPolicy": map[string]any{"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000},
		},
		"hostnames": []any{},
	}
	doc = map[string]any{
		"hostId":      "qemu-exec",
		"volumes":     []any{map[string]any{"volumeId": "counter-data", "appId": "counter", "sizeBytes": 256 << 20, "desiredState": "present"}},
		"instances":   []any{in},
		"checkpoints": []any{}, "exports": []any{},
	}
	writeDoc(t, root, doc)
	serveInBackground(t, cfgPath, "qemu")
	awaitServe(t, cfgPath, 60*time.Second)
	evs = followEvents(t, cfgPath)
	waitEvent(t, evs, "counter", control.VerbStarted, 5*time.Minute)
	waitReport(t, root, "the counter runs", 2*time.Minute, appIs("counter", reported.InstanceRunning))
	return root, cfgPath, doc, in, evs
}

// TestOnARealMicroVMExecAndCpReachTheAppsRoot is issue 34 on QEMU (TCG
// here), over one booted guest: the counter app runs on-request over a
// layer with busybox, and nibrunnerd exec and cp reach its root.
func TestOnARealMicroVMExecAndCpReachTheAppsRoot(t *testing.T) {
	root, cfgPath, doc, in, evs := execGuest(t)
	c := control.NewClient(filepath.Join(root, "run", control.SocketName))
	execs := 0 // the exec and cp sessions run, each an event

	t.Run("AnExecReturnsItsOutputAndExitStatus", func(t *testing.T) {
		execs++
		out, err := ctl("exec", "counter", "--config", cfgPath, "--", "sh", "-c", `echo "$(id -u) $COUNTER_NOTE $(pwd)"; exit 3`)
		var code exitCode
		if !errors.As(err, &code) || code != 3 || out != "65534 from-the-app /data\n" {
			t.Fatalf("exec printed %q and ended %v; want the program's line as nobody and exit status 3", out, err)
		}
	})

	t.Run("ATerminalSessionSeesAResizeAndCtrlCInterruptsTheProgram", func(t *testing.T) {
		execs++
		conn, err := c.Exec(context.Background(), "counter", control.ExecRequest{
			Argv: []string{"sh", "-c", `trap 'echo resized; stty size' WINCH; stty size; while :; do sleep 1; done`},
			UID:  nobody, GID: nobody, TTY: true, Rows: 24, Cols: 80, Stdin: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		stdin, typed := io.Pipe()
		defer typed.Close()
		resize := make(chan [2]uint16, 1)
		out := newWatched()
		ended := make(chan struct{})
		var exit int32
		var runErr error
		go func() {
			defer close(ended)
			e, err := control.RunExec(context.Background(), conn, control.ExecIO{Stdin: stdin, Stdout: out, Stderr: out, Resize: resize})
			exit, runErr = e.Code, err
		}()
		out.await(t, "24 80", ended)
		resize <- [2]uint16{40, 120}
		out.await(t, "40 120", ended)
		if _, err := typed.Write([]byte{0x03}); err != nil { // Ctrl-C
			t.Fatal(err)
		}
		select {
		case <-ended:
		case <-time.After(2 * time.Minute):
			t.Fatalf("Ctrl-C did not end the program: %q", out.String())
		}
		if runErr != nil || exit != 128+2 {
			t.Fatalf("the session ended %d, %v; want 130, the shell killed by SIGINT; it printed %q", exit, runErr, out.String())
		}
	})

	t.Run("ACopyRoundTripOf100MiBKeepsItsSha256", func(t *testing.T) {
		local := t.TempDir()
		blob := make([]byte, 100<<20)
		rand.Read(blob)
		want := sha256.Sum256(blob)
		if err := os.WriteFile(filepath.Join(local, "blob"), blob, 0o640); err != nil {
			t.Fatal(err)
		}
		blob = nil
		start := time.Now()
		execs++
		if _, err := ctl("cp", "--config", cfgPath, filepath.Join(local, "blob"), "counter:/data/"); err != nil {
			t.Fatalf("cp in: %v", err)
		}
		in := time.Since(start)
		execs++
		out, err := ctl("exec", "counter", "--config", cfgPath, "--", "sha256sum", "/data/blob")
		if err != nil || !strings.HasPrefix(out, hex.EncodeToString(want[:])+" ") {
			t.Fatalf("the guest's sha256sum said %q, %v; want %x", out, err, want)
		}
		start = time.Now()
		execs++
		if _, err := ctl("cp", "--config", cfgPath, "counter:/data/blob", filepath.Join(local, "back")); err != nil {
			t.Fatalf("cp out: %v", err)
		}
		t.Logf("100 MiB in %v, out %v", in.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		if got := sum(t, filepath.Join(local, "back")); got != want {
			t.Fatalf("the round trip changed the file: %x, want %x", got, want)
		}
		if fi, err := os.Stat(filepath.Join(local, "back")); err != nil || fi.Mode().Perm() != 0o640 {
			t.Fatalf("the copy's mode is %v (%v); want 0640", fi.Mode(), err)
		}
	})

	t.Run("AnExecWakesASleepingOnRequestApp", func(t *testing.T) {
		if _, err := ctl("sleep", "counter", "--config", cfgPath); err != nil {
			t.Fatal(err)
		}
		waitEvent(t, evs, "counter", control.VerbSlept, 2*time.Minute)
		execs++
		out, err := ctl("exec", "counter", "--config", cfgPath, "--", "cat", "/data/blob.none", "/proc/self/comm")
		var code exitCode
		if !errors.As(err, &code) || code != 1 || out != "cat\n" {
			t.Fatalf("exec into the sleeping app printed %q and ended %v; want cat's line and its status 1", out, err)
		}
		waitEvent(t, evs, "counter", control.VerbWoke, time.Minute)
	})

	t.Run("EachExecIsAnEvent", func(t *testing.T) {
		var got []control.Event
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			got = got[:0]
			out, err := ctl("events", "--output", "json", "--config", cfgPath)
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			for {
				var e control.Event
				if dec.Decode(&e) != nil {
					break
				}
				if e.Subject == control.SubjectExec {
					got = append(got, e)
				}
			}
			if len(got) >= execs || time.Now().After(deadline) {
				break
			}
		}
		if len(got) != execs {
			t.Fatalf("events show %d exec and cp sessions, want %d: %+v", len(got), execs, got)
		}
		first := got[0]
		if first.ID != "counter" || first.Verb != control.VerbExec || first.Argv[0] != "sh" ||
			first.ExitCode == nil || *first.ExitCode != 3 || first.PeerUID == nil || *first.PeerUID != 0 {
			b, _ := json.Marshal(first)
			t.Fatalf("the first exec's event is %s; want counter, sh, exit status 3, asked by uid 0", b)
		}
		verbs := map[control.Verb]int{}
		for _, e := range got {
			verbs[e.Verb]++
		}
		if verbs[control.VerbCopy] != 2 {
			t.Fatalf("events show %d copies, want 2: %+v", verbs[control.VerbCopy], got)
		}
	})

	t.Run("AnExecIntoAStoppedAppIsRefusedWithASentence", func(t *testing.T) {
		in["desiredState"] = "stopped"
		writeDoc(t, root, doc)
		waitReport(t, root, "the counter stopped", 2*time.Minute, appIs("counter", reported.InstanceStopped))
		out, err := ctl("exec", "counter", "--config", cfgPath, "--", "true")
		if err == nil || !strings.Contains(err.Error(), "exec into counter: it is not running") || out != "" {
			t.Fatalf("exec into the stopped app printed %q and ended %v; want it refused as not running", out, err)
		}
	})
}

// BenchmarkExecBesidePs is issue 34's measure: nibrunnerd exec of a
// trivial program (busybox true) into the running guest, beside
// nibrunnerd ps, each a whole command line (flags, config.toml, the
// control socket) as an operator types it, alternating in one run over
// the same socket. It reports each one's p50 and p99.
func BenchmarkExecBesidePs(b *testing.B) {
	_, cfgPath, _, _, _ := execGuest(b)
	var execs, pss []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if out, err := ctl("exec", "counter", "--config", cfgPath, "--", "true"); err != nil || out != "" {
			b.Fatalf("exec: %q, %v", out, err)
		}
		t1 := time.Now()
		if _, err := ctl("ps", "--config", cfgPath); err != nil {
			b.Fatalf("ps: %v", err)
		}
		execs, pss = append(execs, t1.Sub(t0)), append(pss, time.Since(t1))
	}
	for _, m := range []struct {
		name string
		d    []time.Duration
	}{{"exec", execs}, {"ps", pss}} {
		slices.Sort(m.d)
		at := func(q float64) float64 {
			return float64(m.d[min(len(m.d)-1, int(q*float64(len(m.d))))].Microseconds()) / 1000
		}
		b.ReportMetric(at(0.50), m.name+"-p50-ms")
		b.ReportMetric(at(0.99), m.name+"-p99-ms")
	}
	b.ReportMetric(0, "ns/op")
}
