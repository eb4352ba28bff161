package qemu

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/vmm"
)

// suidLayer packs a set-user-ID root copy of the counter at /app/suid, a
// layer of the tenant's own as an image could carry it.
func suidLayer(t *testing.T, f fixture) string {
	t.Helper()
	mksquashfs := testenv.RequireCommand(t, "mksquashfs")
	stage := filepath.Join(f.dir, "suid-stage")
	if err := os.MkdirAll(filepath.Join(stage, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(stage, "app", "suid")
	in, err := os.Open(f.counter)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(probe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	out.Close()
	if err := os.Chmod(probe, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(f.dir, "suid.sqfs")
	if b, err := exec.Command(mksquashfs, stage, img, "-noappend", "-all-root", "-no-xattrs", "-quiet", "-no-progress").CombinedOutput(); err != nil {
		t.Fatalf("pack the set-user-ID layer: %v\n%s", err, b)
	}
	return img
}

// statusLine is the value of one /proc/PID/status field in out.
func statusLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "(no " + name + " line)"
}

// One guest on the restricted user network, for both halves of the
// tenant's boundary: it cannot become root, and it cannot reach the host.
func TestATenantStaysUnprivilegedAndItsUserNetworkReachesNothingOnTheHost(t *testing.T) {
	testenv.RequireRoot(t)
	f := newFixture(t)
	img := suidLayer(t, f)
	// A service on the host's loopback only, as /metrics or another
	// tenant's forward would be.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan string, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c.RemoteAddr().String():
			default:
			}
			c.Close()
		}
	}()
	var logs testenv.SyncBuffer
	v := newVMM(t, f.dir, &logs)
	spec := f.spec(t, "rooted")
	spec.Layers = append(spec.Layers, vmm.Layer{Kind: vmm.LayerFilesystem, Digest: "suid", Path: img})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	st := started(t, ctx, v, spec, &logs)

	t.Run("ASetuidRootProgramInTheTenantsLayerRunsAs65534WithNoNewPrivs", func(t *testing.T) {
		out := get(t, st.Endpoint, "/exec?path=/app/suid", 2*time.Minute)
		if first, _, _ := strings.Cut(out, "\n"); first != "euid=65534" {
			t.Errorf("the set-user-ID root program ran with %s, want euid=65534:\n%s", first, out)
		}
		for field, want := range map[string]string{
			"Uid": "65534\t65534\t65534\t65534", "NoNewPrivs": "1",
			"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000",
		} {
			if got := statusLine(out, field); got != want {
				t.Errorf("the set-user-ID program's %s is %q, want %q", field, got, want)
			}
		}
		tenant := get(t, st.Endpoint, "/file?path=/proc/self/status", time.Minute)
		if statusLine(tenant, "NoNewPrivs") != "1" || statusLine(tenant, "CapBnd") != "0000000000000000" {
			t.Errorf("the tenant itself has NoNewPrivs %s and CapBnd %s, want 1 and none",
				statusLine(tenant, "NoNewPrivs"), statusLine(tenant, "CapBnd"))
		}
	})

	t.Run("10.0.2.2ReachesNothingOnTheHostsLoopback", func(t *testing.T) {
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		if got := get(t, st.Endpoint, "/dial?addr=10.0.2.2:"+port, time.Minute); got == "connected" {
			t.Errorf("the guest connected to the host's 127.0.0.1:%s through 10.0.2.2", port)
		} else {
			t.Logf("the guest's dial to 10.0.2.2:%s: %s", port, got)
		}
		select {
		case from := <-accepted:
			t.Errorf("the host's loopback listener accepted a connection from %s", from)
		default:
		}
	})
}
