package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/control"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/reported"
)

// TestOnARealMicroVMPsStatusLogsAndEventsShowTheGuest is the operator's
// command line against nibrunnerd serve on QEMU (TCG here): the demo's
// counter app boots as an executable layer, and ps, status, logs and
// events show it booting, running, sleeping and waking.
func TestOnARealMicroVMPsStatusLogsAndEventsShowTheGuest(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	root, cfgPath, _, _, _ := fakeHost(t)
	bctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := guestimage.Build(bctx, testenv.GuestImageDir()); err != nil {
		t.Fatalf("build the guest image: %v", err)
	}
	qemuConfig(t, root, "")

	// The tenant: examples/apps/counter, static, as an executable layer.
	bin := filepath.Join(root, "store", "apps", "counter")
	build := exec.CommandContext(bctx, "go", "build", "-trimpath", "-o", bin, "../../examples/apps/counter")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the counter: %v\n%s", err, out)
	}
	exe, _ := os.ReadFile(bin)
	sum := sha256.Sum256(exe)
	// A slot whose host port (QEMU's user-network forward on loopback)
	// no other test uses: 52200–52999, between the daemon tests' ranges.
	os.MkdirAll(filepath.Join(root, "state"), 0o755)
	st, err := db.Open(bctx, filepath.Join(root, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutSlots(bctx, map[string]int{"counter": 3900 + rand.IntN(100)}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	writeDoc(t, root, map[string]any{
		"hostId":  "qemu-ops",
		"volumes": []any{map[string]any{"volumeId": "counter-data", "appId": "counter", "sizeBytes": 16 << 20, "desiredState": "present"}},
		"instances": []any{map[string]any{
			"appId": "counter", "deploymentId": "counter-1", "volumeId": "counter-data", "desiredState": "on-request", "idleTimeoutMs": 600000,
			"layers": []any{map[string]any{"kind": "executable", "digest": hex.EncodeToString(sum[:]), "objectKey": "apps/counter", "destinationPath": "/app/counter"}},
			"config": map[string]any{
				"httpPort":  8080,
				"command":   map[string]any{"program": "/app/counter", "args": []any{}, "workingDirectory": "/data", "environment": map[string]any{}},
				"resources": map[string]any{"vcpuCount": 1, "memoryMib": 128},
				"healthCheck": map[string]any{"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
					"gracePeriodMs": 300000, "healthyThreshold": 1, "unhealthyThreshold": 3},
				"restartPolicy": map[string]any{"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000},
			},
			"hostnames": []any{},
		}},
		"checkpoints": []any{}, "exports": []any{},
	})
	serveInBackground(t, cfgPath, "qemu")
	awaitServe(t, cfgPath, 60*time.Second)
	evs := followEvents(t, cfgPath)
	waitEvent(t, evs, "counter", control.VerbStarted, 5*time.Minute)
	r := waitReport(t, root, "the counter measured", 60*time.Second, func(r *reported.HostReportedState) bool {
		return len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceRunning && r.Instances[0].Compute != nil
	})
	port := r.Instances[0].HostPort
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatalf("the counter at its host port: %v", err)
	}
	resp.Body.Close()

	out, err := ctl("ps", "--config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	row := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1])
	if row[0] != "counter" || row[1] != "running" || row[2] != "counter-1" || row[3] != fmt.Sprint(port) || !strings.Contains(out, "MiB/") {
		t.Fatalf("ps printed:\n%s", out)
	}
	out, err = ctl("status", "counter", "--output", "json", "--config", cfgPath)
	var status control.AppStatus
	if err != nil || json.Unmarshal([]byte(out), &status) != nil || status.Instance.StartedAt == nil ||
		len(status.Volumes) != 1 || status.Volumes[0].State != reported.VolumeReady {
		t.Fatalf("status: %v\n%s", err, out)
	}

	out, err = ctl("logs", "counter", "--config", cfgPath)
	if err != nil || !strings.Contains(out, "counter listening on :8080 in /data") || !strings.Contains(out, "\nconsole | ") {
		t.Fatalf("logs hold neither the tenant's first line nor the console: %v\n%s", err, out)
	}
	out, err = ctl("logs", "counter", "--tail", "3", "--output", "json", "--config", cfgPath)
	var tenant, console int
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var ll control.LogLine
		if json.Unmarshal([]byte(l), &ll) != nil {
			t.Fatalf("logs --output json printed %q", l)
		}
		switch ll.Source {
		case "tenant":
			tenant++
		case "console":
			console++
		}
	}
	if err != nil || tenant == 0 || tenant > 3 || console == 0 || console > 3 {
		t.Fatalf("logs --tail 3: %d tenant and %d console lines: %v\n%s", tenant, console, err, out)
	}

	// A sleep and a wake over the socket, as events.
	if _, err := ctl("sleep", "counter", "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, "counter", control.VerbSlept, 2*time.Minute)
	if _, err := ctl("wake", "counter", "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, evs, "counter", control.VerbWoke, 2*time.Minute)
	out, err = ctl("events", "--config", cfgPath)
	for _, want := range []string{" started ", " slept ", " woke "} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("events lack %q: %v\n%s", want, err, out)
		}
	}
}
