package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/store/s3test"
	"alpnib.dev/nibrunner/vmm/qemu"
)

// TestAnAppAsleepOnHostAWakesOnHostBFromItsMemoryThroughTheStore is issue
// 35's fourth "done when", through two nibrunnerd serves on QEMU (TCG
// here) sharing one versitygw bucket, as docs/fleet.md tells it: the
// counter app answers three requests on A and is put to sleep; A's
// document takes a checkpoint of its volume, which carries the memory
// snapshot beside it; B's document restores the volume from that
// checkpoint and lists the app as A did. The app arrives on B asleep, and
// the first request through B's proxy wakes it where it fell asleep: its
// in-memory count goes on from A's (request #4), and so does its
// visits.log on the volume. The same app booted cold on B in the same run
// takes longer than that wake.
func TestAnAppAsleepOnHostAWakesOnHostBFromItsMemoryThroughTheStore(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	srv := s3test.Start(t)
	srv.SetEnv(t)
	bucket := srv.Bucket(t, "fleet")
	ctx := context.Background()
	daemontest.GuestImage(t)

	counterBin := filepath.Join(t.TempDir(), "counter")
	counter, err := daemontest.Tenant("alpnib.dev/examples/apps/counter", counterBin)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(counterBin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client.PutObject(ctx, bucket, "apps/counter", bytes.NewReader(exe), int64(len(exe)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}

	// Two hosts: folders of their own, one bucket for artifacts and
	// checkpoints, a proxy each.
	type host struct {
		root, cfg string
		port      int
	}
	newHost := func(prefix string) host {
		h := host{root: daemontest.RunDir(t, prefix), port: freeTCPPort(t)}
		h.cfg = qemuConfig(t, h.root, fmt.Sprintf("[proxy.http]\nlisten_address = \"127.0.0.1\"\nport = %d\n", h.port),
			`store_url = "`+h.root+`/store"`, `store_url = "s3://fleet"`)
		return h
	}
	a, b := newHost("nta"), newHost("ntb")
	for _, p := range []struct {
		h   host
		app string
	}{{a, "counter"}, {b, "counter"}, {b, "cold"}} {
		if err := daemontest.PinSlot(ctx, filepath.Join(p.h.root, "state"), p.app, slottest.Free(t)); err != nil {
			t.Fatal(err)
		}
	}
	instance := func(app, deployment string) map[string]any {
		return map[string]any{
			"appId": app, "deploymentId": deployment, "volumeId": app + "-data", "desiredState": "on-request", "idleTimeoutMs": 600000,
			"layers": []any{map[string]any{"kind": "executable", "digest": counter, "objectKey": "apps/counter", "destinationPath": "/app/counter"}},
			"config": map[string]any{
				"httpPort":  8080,
				"command":   map[string]any{"program": "/app/counter", "args": []any{}, "workingDirectory": "/data", "environment": map[string]any{}},
				"resources": map[string]any{"vcpuCount": 1, "memoryMib": 128},
				"healthCheck": map[string]any{"kind": "http", "path": "/healthz", "intervalMs": 500, "timeoutMs": 5000,
					"gracePeriodMs": 300000, "healthyThreshold": 1, "unhealthyThreshold": 3},
				"restartPolicy": map[string]any{"maxRestarts": 2, "initialBackoffMs": 1000, "maxBackoffMs": 10000, "backoffFactor": 2, "resetAfterMs": 600000},
			},
			"hostnames": []any{map[string]any{"hostname": app + ".example.net", "kind": "platform"}},
		}
	}
	volume := func(app string) map[string]any {
		return map[string]any{"volumeId": app + "-data", "appId": app, "sizeBytes": 32 << 20, "desiredState": "present"}
	}
	get := func(h host, hostname string, want string) time.Duration {
		t.Helper()
		start := time.Now()
		code, body, err := proxyGet(h.port, hostname, "/")
		if err != nil || code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("GET %s through %s's proxy: %d %q %v; want 200 and %q", hostname, h.root, code, body, err, want)
		}
		return time.Since(start)
	}

	// On A: booted, three requests counted in memory, then asleep.
	docA := map[string]any{"hostId": "host-a", "volumes": []any{volume("counter")}, "instances": []any{instance("counter", "counter-1")},
		"checkpoints": []any{}, "exports": []any{}}
	writeDoc(t, a.root, docA)
	serveInBackground(t, a.cfg, "qemu")
	waitReport(t, a.root, "the counter running on A", 6*time.Minute, appIs("counter", reported.InstanceRunning))
	awaitRoute(t, a.port, "counter.example.net", "/healthz", "ok\n")
	for i := 1; i <= 3; i++ {
		get(a, "counter.example.net", fmt.Sprintf("request #%d since boot", i))
	}
	if out, err := ctl("sleep", "counter", "--config", a.cfg); err != nil {
		t.Fatalf("sleep on A: %v: %s", err, out)
	}
	waitReport(t, a.root, "the counter asleep on A", 2*time.Minute, appIs("counter", reported.InstanceIdle))

	// A's checkpoint of its volume carries the snapshot beside it.
	start := time.Now()
	docA["checkpoints"] = []any{map[string]any{"checkpointId": "move-1", "volumeId": "counter-data", "desiredState": "present"}}
	writeDoc(t, a.root, docA)
	r := waitReport(t, a.root, "the checkpoint ready on A", 3*time.Minute, func(r *reported.HostReportedState) bool {
		return len(r.Checkpoints) == 1 && r.Checkpoints[0].State == reported.CheckpointReady
	})
	upTime := time.Since(start)
	cp := r.Checkpoints[0]
	var sent []int64
	for _, key := range []string{string(cp.ObjectKey), qemu.TravelPrefix(string(cp.ObjectKey)) + qemu.TravelStateObject, qemu.TravelPrefix(string(cp.ObjectKey)) + qemu.TravelStampObject} {
		info, err := srv.Client.StatObject(ctx, bucket, key, minio.StatObjectOptions{})
		if err != nil {
			t.Fatalf("after the checkpoint %s is not in the bucket: %v", key, err)
		}
		sent = append(sent, info.Size)
	}

	// On B: the volume from A's checkpoint, the app as A listed it. It
	// arrives asleep: an on-request app that never ran would boot at once.
	docB := map[string]any{"hostId": "host-b", "volumes": []any{volume("counter")}, "instances": []any{instance("counter", "counter-1")},
		"checkpoints": []any{}, "exports": []any{}}
	docB["volumes"].([]any)[0].(map[string]any)["initialContents"] = map[string]any{"objectKey": string(cp.ObjectKey), "digest": string(cp.Digest), "destinationPath": "/"}
	start = time.Now()
	writeDoc(t, b.root, docB)
	serveInBackground(t, b.cfg, "qemu")
	r = waitReport(t, b.root, "the counter's volume restored on B", 3*time.Minute, func(r *reported.HostReportedState) bool {
		for _, v := range r.Volumes {
			if v.VolumeId == "counter-data" {
				return v.State == reported.VolumeReady
			}
		}
		return false
	})
	downTime := time.Since(start)
	// Recorded asleep before its volume counted as made, and still asleep
	// a pass later: an on-request app that never ran would boot at once.
	if !appIs("counter", reported.InstanceIdle)(r) {
		t.Fatalf("when its volume was restored on B the counter was not idle (it arrives asleep): %+v", r.Instances)
	}
	later := waitReport(t, b.root, "a pass after the restore", time.Minute, func(n *reported.HostReportedState) bool { return n.ReportedAt.After(r.ReportedAt) })
	if !appIs("counter", reported.InstanceIdle)(later) {
		t.Fatalf("a pass after its volume was restored on B the counter was not idle (until a request wakes it): %+v", later.Instances)
	}

	// The first request through B's proxy wakes it from A's memory.
	wake := get(b, "counter.example.net", `request #4 since boot, file says "(no greeting.txt)"; visits.log has 4 lines`)
	waitReport(t, b.root, "the counter awake on B", time.Minute, appIs("counter", reported.InstanceRunning))

	// The same app booted cold on B, in the same run.
	docB["volumes"] = append(docB["volumes"].([]any), volume("cold"))
	docB["instances"] = append(docB["instances"].([]any), instance("cold", "cold-1"))
	start = time.Now()
	writeDoc(t, b.root, docB)
	waitReport(t, b.root, "the cold one running on B", 6*time.Minute, appIs("cold", reported.InstanceRunning))
	cold := time.Since(start)
	get(b, "cold.example.net", "request #1 since boot")
	if wake >= cold {
		t.Errorf("the wake on B from A's snapshot took %s, a cold boot on B %s: the wake should be faster", wake, cold)
	}
	t.Logf("wake anywhere: checkpoint and snapshot up from A %s (bytes: volume's data %d, state %d, stamp %d); restore on B %s; "+
		"wake on B through its proxy %s; cold boot on B %s", upTime.Round(time.Millisecond), sent[0], sent[1], sent[2],
		downTime.Round(time.Millisecond), wake.Round(time.Millisecond), cold.Round(time.Millisecond))
}
