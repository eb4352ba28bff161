// Package scripts holds the shell scripts behind the Makefile; its tests
// run them.
package scripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
)

// pathWithout is a PATH holding every command of this one (and of /sbin,
// /usr/sbin) except those whose name starts with one of hide: a folder of
// links per folder of PATH.
func pathWithout(t *testing.T, hide ...string) string {
	t.Helper()
	var dirs []string
	for i, dir := range append(filepath.SplitList(os.Getenv("PATH")), "/usr/sbin", "/sbin") {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		shadow := filepath.Join(t.TempDir(), "path", string(rune('a'+i%26)))
		if err := os.MkdirAll(shadow, 0o755); err != nil {
			t.Fatal(err)
		}
	next:
		for _, e := range entries {
			for _, h := range hide {
				if strings.HasPrefix(e.Name(), h) {
					continue next
				}
			}
			os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(shadow, e.Name()))
		}
		dirs = append(dirs, shadow)
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// summaryOf is the "What ran" section of a demo's output, one line each,
// without colour.
func summaryOf(out string) []string {
	out = ansi.ReplaceAllString(out, "")
	_, after, ok := strings.Cut(out, "== What ran\n")
	if !ok {
		return nil
	}
	var lines []string
	for _, l := range strings.Split(after, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		lines = append(lines, strings.Join(strings.Fields(l), " "))
	}
	return lines
}

func TestWithoutQEMUTheDemosSummarySaysTheMicroVMPartWasSkippedAndWhatRanInstead(t *testing.T) {
	testenv.RequireCommand(t, "go", "jq", "curl", "mke2fs", "mksquashfs")
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/nibrunnerd")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build nibrunnerd: %v\n%s", err, out)
	}
	cmd := exec.Command("./netguard.sh", "./demo-nibrunner.sh", bin)
	cmd.Env = append(os.Environ(), "PATH="+pathWithout(t, "qemu-system"), "NIB_DEMO_SUMMARY=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the demo without QEMU: %v\n%s", err, out.String())
	}
	lines := summaryOf(out.String())
	has := func(prefix string) bool {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
	for _, want := range []string{
		"ran nibrunnerd check",
		"skipped nibrunnerd in a microVM — this host lacks qemu-system-x86_64",
		"ran nibrunnerd on the fake VMM",
		"ran nibrunnerd ps, logs, events",
		"skipped checkpoint and export — this demo takes them of a running microVM's volume, and no microVM ran",
	} {
		if !has(want) {
			t.Errorf("the summary has no line %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
	if has("ran nibrunnerd in a microVM") || has("ran checkpoint and export") || strings.Contains(strings.Join(lines, "\n"), "booted on QEMU") {
		t.Errorf("the summary claims a microVM that never ran:\n%s", strings.Join(lines, "\n"))
	}
	if !strings.Contains(ansi.ReplaceAllString(out.String(), ""), "apt-get install qemu-system-x86") {
		t.Errorf("the demo does not say what to install:\n%s", out.String())
	}
}

// Without root, make demo's setup step installs nothing, says exactly what
// to install, and lets the demo go on; make test's stops. A stand-in for go
// (GOPATH and the module download) keeps the step offline.
func TestWithoutRootSetupSaysWhatToInstallAndTheDemoGoesOn(t *testing.T) {
	setpriv := testenv.RequireCommand(t, "setpriv")
	if os.Getuid() != 0 {
		testenv.Missing(t, "root, to run setup.sh as another user")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(dir, "shim")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	goShim := "#!/bin/sh\ncase \"$1 $2\" in 'env GOPATH') echo " + dir + "/gopath ;; esac\nexit 0\n"
	if err := os.WriteFile(filepath.Join(shim, "go"), []byte(goShim), 0o755); err != nil {
		t.Fatal(err)
	}
	path := shim + string(os.PathListSeparator) + pathWithout(t, "jq", "go")
	// the test's temporary folders (dir's parent holds them all) are 0700
	if err := filepath.WalkDir(filepath.Dir(dir), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(setpriv, append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", "env", "-i", "HOME=" + dir, "PATH=" + path, "./setup.sh"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("--for-demo")
	if err != nil {
		t.Fatalf("setup.sh --for-demo as a user stopped the demo: %v\n%s", err, out)
	}
	if !strings.Contains(out, "not root, so nothing is installed") || !regexp.MustCompile(`apt-get install [a-z0-9 .+-]*\bjq\b`).MatchString(out) {
		t.Errorf("setup.sh --for-demo as a user does not say what to install (apt-get install … jq):\n%s", out)
	}
	out, err = run()
	if err == nil || !strings.Contains(out, "missing Debian packages") || !strings.Contains(out, "jq") {
		t.Errorf("setup.sh (make test) as a user with jq missing: err %v, want a failure naming jq:\n%s", err, out)
	}
}
