package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm/fake"
)

// ctlConfig writes a host configuration under root (no proxy) and
// returns its path.
func ctlConfig(t testing.TB, root string) string {
	t.Helper()
	config := fmt.Sprintf(`max_apps = 10
[paths]
state_dir = "%[1]s/state"
runtime_dir = "%[1]s/run"
snapshot_dir = "%[1]s/snap"
guest_image_dir = "%[1]s/guest"
desired_state_file = "%[1]s/control/desired.json"
[artifacts]
store_url = "%[1]s/store"
[volumes]
backend = "local-file"
storage_prefix = "%[1]s/volumes"
[exports]
store_url = "%[1]s/exports"
staging_dir = "%[1]s/staging"
[network]
denied_egress_addresses_v4 = []
denied_egress_addresses_v6 = []
`, root)
	cfgPath := filepath.Join(root, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

// ctl runs one nibrunnerd command line and returns what it printed.
// qemuConfig writes ctlConfig for a serve on QEMU and returns its path:
// the guest image the QEMU tests share, room for the slots slottest pins,
// each pair of replace (old, new) replaced, then extra (more tables) at
// the end.
func qemuConfig(t testing.TB, root, extra string, replace ...string) string {
	t.Helper()
	cfgPath := ctlConfig(t, root)
	cfg, _ := os.ReadFile(cfgPath)
	replace = append(replace,
		`guest_image_dir = "`+root+`/guest"`, `guest_image_dir = "`+testenv.GuestImageDir()+`"`,
		"max_apps = 10", "max_apps = 4000")
	if err := os.WriteFile(cfgPath, []byte(strings.NewReplacer(replace...).Replace(string(cfg))+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}

func ctl(args ...string) (string, error) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestSleepWithNoDaemonSaysNoneIsListeningAndHowToStartOne(t *testing.T) {
	root := t.TempDir()
	cfgPath := ctlConfig(t, root)
	for _, verb := range []string{"sleep", "wake"} {
		out, err := ctl(verb, "counter", "--config", cfgPath)
		want := "no nibrunnerd is listening on " + filepath.Join(root, "run", "nibrunnerd.sock") + "; start it with nibrunnerd serve"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("%s: %v, want it to start %q", verb, err, want)
		}
		if out != "" {
			t.Fatalf("%s printed %q as if it worked", verb, out)
		}
	}
}

// fakeHost is a host configuration under a short folder (control socket
// paths are short) and the example document on a layer the folder store
// has, with its one app on-request and no hostnames (this host has no
// proxy). It returns the folder, the configuration, the document and its
// instance (to change and write again) and the app's id.
func fakeHost(t *testing.T) (root, cfgPath string, doc, in map[string]any, app string) {
	t.Helper()
	testenv.RequireCommand(t, "mke2fs") // the ext4 volume backend
	root, err := os.MkdirTemp("", "ctl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	t.Cleanup(func() { fake.KillAll(filepath.Join(root, "run")) })
	cfgPath = ctlConfig(t, root)
	layer := append([]byte("hsqs"), make([]byte, 4092)...)
	os.MkdirAll(filepath.Join(root, "store", "layers"), 0o755)
	os.WriteFile(filepath.Join(root, "store", "layers", "base.squashfs"), layer, 0o644)
	sum := sha256.Sum256(layer)
	b, err := os.ReadFile("../../examples/desired.json")
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &doc)
	in = doc["instances"].([]any)[0].(map[string]any)
	in["layers"] = []any{map[string]any{"kind": "filesystem", "digest": hex.EncodeToString(sum[:]), "objectKey": "layers/base.squashfs"}}
	in["desiredState"] = "on-request"
	in["hostnames"] = []any{} // this host has no proxy
	app = in["appId"].(string)
	doc["volumes"].([]any)[0].(map[string]any)["sizeBytes"] = 8 << 20
	writeDoc(t, root, doc)
	return root, cfgPath, doc, in, app
}

// writeDoc replaces the host's desired.json as a control plane does.
func writeDoc(t testing.TB, root string, doc map[string]any) {
	t.Helper()
	b, _ := json.Marshal(doc)
	os.MkdirAll(filepath.Join(root, "control"), 0o755)
	os.WriteFile(filepath.Join(root, "control", "desired.json.tmp"), b, 0o644)
	if err := os.Rename(filepath.Join(root, "control", "desired.json.tmp"), filepath.Join(root, "control", "desired.json")); err != nil {
		t.Fatal(err)
	}
}

// serveInBackground runs serve on cfgPath until the test ends.
func serveInBackground(t testing.TB, cfgPath, vmmKind string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfgPath, vmmKind, 0, vmmKind == "qemu") }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

func TestSleepAndWakeFromTheCommandLineReachARunningServe(t *testing.T) {
	root, cfgPath, doc, in, app := fakeHost(t)
	serveInBackground(t, cfgPath, "fake")
	waitState := func(want reported.InstanceState) {
		t.Helper()
		var r reported.HostReportedState
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(root, "state", "reported.json")); err == nil && json.Unmarshal(b, &r) == nil &&
				len(r.Instances) == 1 && r.Instances[0].State == want {
				return
			}
		}
		t.Fatalf("%s never became %s: %+v", app, want, r.Instances)
	}
	waitState(reported.InstanceRunning)

	out, err := ctl("sleep", app, "--config", cfgPath)
	if err != nil || !strings.HasPrefix(out, app+": sleep done in ") {
		t.Fatalf("sleep: %q, %v", out, err)
	}
	waitState(reported.InstanceIdle)
	if _, err := os.Stat(filepath.Join(root, "snap", app, "stamp.json")); err != nil {
		t.Fatalf("no snapshot after the sleep: %v", err)
	}
	out, err = ctl("wake", app, "--config", cfgPath)
	if err != nil || !strings.HasPrefix(out, app+": wake done in ") {
		t.Fatalf("wake: %q, %v", out, err)
	}
	waitState(reported.InstanceRunning)

	// A running app is not the daemon's to put to sleep: the refusal
	// comes back in the daemon's words.
	in["desiredState"] = "running"
	writeDoc(t, root, doc)
	b, _ := json.Marshal(doc)
	digest := sha256.Sum256(b)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var r reported.HostReportedState
		if b, err := os.ReadFile(filepath.Join(root, "state", "reported.json")); err == nil && json.Unmarshal(b, &r) == nil &&
			string(r.AcceptedDigest) == hex.EncodeToString(digest[:]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never accepted the new document: %+v", r)
		}
	}
	_, err = ctl("sleep", app, "--config", cfgPath)
	if err == nil || !strings.Contains(err.Error(), "desired.json asks it running") {
		t.Fatalf("sleeping a running app: %v", err)
	}
}
