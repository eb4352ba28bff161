package main

import (
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/reported"
)

// TestNobodyElseCanReadWhatServeKeeps runs serve (fake VMM) on a host whose
// state, runtime and snapshot folders do not exist yet, under an open
// umask, with a tenant secret in the environment, and a volumes folder
// left world-readable by hand. Once the app has run and slept, an
// unprivileged user (65534) can list no folder and read no file under
// state_dir, runtime_dir, snapshot_dir or the volumes, and serve said
// what it tightened.
func TestNobodyElseCanReadWhatServeKeeps(t *testing.T) {
	testenv.RequireRoot(t)
	setpriv := testenv.RequireCommand(t, "setpriv")
	old := unix.Umask(0o022)
	t.Cleanup(func() { unix.Umask(old) })
	logs := &testenv.SyncBuffer{}
	log.SetOutput(logs)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	root, cfgPath, doc, in, app := fakeHost(t)
	// Every folder above is open to others, as /var/lib is: only the
	// daemon's own modes may keep them out.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"state", "run", "snap"} {
		if _, err := os.Stat(filepath.Join(root, d)); err == nil {
			t.Fatalf("%s exists before serve; the test wants serve to make it", d)
		}
	}
	os.MkdirAll(filepath.Join(root, "volumes"), 0o755)
	os.WriteFile(filepath.Join(root, "volumes", "left-by-hand.img"), []byte("old"), 0o644)
	in["config"].(map[string]any)["command"].(map[string]any)["environment"] = map[string]any{"SECRET_TOKEN": "hunter2"}
	writeDoc(t, root, doc)

	serveInBackground(t, cfgPath, "fake")
	waitReport(t, root, app+" running", 60*time.Second, func(r *reported.HostReportedState) bool {
		return len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceRunning
	})
	if _, err := ctl("sleep", app, "--config", cfgPath); err != nil {
		t.Fatal(err)
	}
	waitReport(t, root, app+" asleep", 60*time.Second, func(r *reported.HostReportedState) bool {
		return len(r.Instances) == 1 && r.Instances[0].State == reported.InstanceIdle
	})

	var paths []string
	for _, d := range []string{"state", "run", "snap", "volumes"} {
		filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.Type()&fs.ModeSymlink == 0 {
				paths = append(paths, p)
			}
			return nil
		})
	}
	for _, want := range []string{"state/state.db", "state/state.db-wal", "snap/" + app} {
		found := false
		for _, p := range paths {
			found = found || p == filepath.Join(root, want)
		}
		if !found {
			t.Fatalf("%s is not there to check; the walk found %v", want, paths)
		}
	}
	for _, p := range []string{"state/state.db", "state/state.db-wal"} {
		st, _ := os.Stat(filepath.Join(root, p))
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s is %#o, want 0600", p, m)
		}
	}
	// As nobody: a folder it can list or a file it can read is printed.
	script := `for p in "$@"; do if [ -d "$p" ]; then ls "$p" >/dev/null 2>&1 && echo "listed $p"; else cat "$p" >/dev/null 2>&1 && echo "read $p"; fi; done; true`
	out, err := exec.Command(setpriv, append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", "sh", "-c", script, "sh"}, paths...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("run as nobody: %v: %s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("an unprivileged user got at %d of %d paths:\n%s", strings.Count(s, "\n")+1, len(paths), s)
	}
	// The control: nobody can read the world-readable desired.json beside.
	if out, err := exec.Command(setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", "cat", filepath.Join(root, "control", "desired.json")).CombinedOutput(); err != nil || !strings.Contains(string(out), "hunter2") {
		t.Fatalf("the check cannot read even an open file as nobody: %v: %.200s", err, out)
	}
	if l := logs.String(); !strings.Contains(l, filepath.Join(root, "volumes")+" held 2 folders and files others could read or write") ||
		!strings.Contains(l, filepath.Join(root, "volumes", "left-by-hand.img")+" 0644 → 0640") {
		t.Errorf("serve did not say what it tightened; its log:\n%s", l)
	}
}
