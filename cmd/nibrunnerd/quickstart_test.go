package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/doctest"
	"alpnib.dev/internal/testenv"
)

// asNibrunnerd, set to 1, makes the test binary run as nibrunnerd.
const asNibrunnerd = "NIB_TEST_AS_NIBRUNNERD"

// docs/quickstart.md, run as written from the checkout with this test
// binary as nibrunnerd: from install --root to an app answering on its
// hostname through the proxy, asleep and woken, then removed. Every line
// exits as its comment says.
func TestTheQuickstartRunsAsWritten(t *testing.T) {
	testenv.RequireCommand(t, "mke2fs")
	testenv.RequireCommand(t, "curl")
	out := runGuide(t, "../../docs/quickstart.md", 3*time.Minute)
	for _, says := range []string{"hello hello-1\nhello: sleep done", "hello: sleep done in", "woke"} {
		if !strings.Contains(out, says) {
			t.Errorf("the quickstart never says %q", says)
		}
	}
	if strings.Count(out, "hello hello-1\n") != 2 {
		t.Errorf("the app answered %d times through the proxy, want 2", strings.Count(out, "hello hello-1\n"))
	}
	if t.Failed() {
		t.Logf("the quickstart's output:\n%s", out)
	}
}

// runGuide runs the ```sh lines of the guide at path from the checkout,
// with this test binary as nibrunnerd and a temporary folder of its own,
// within timeout, failing t for each line that exits otherwise than its
// comment says. The guide's first line must be the one that builds
// nibrunnerd; this stands in for it. It returns what the lines wrote.
func runGuide(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	lines := doctest.Lines(t, path)
	if lines[0] != "make build && PATH=$PWD/bin:$PATH" {
		t.Fatalf("%s's first line is %q; this test stands in for it with its own nibrunnerd", path, lines[0])
	}
	lines[0] = "PATH=" + doctest.Tool(t, "nibrunnerd") + ":$PATH"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// The fake VMM's guests live in sessions of their own, as guests
	// outlive serve; a guide removes its app, and this removes whatever a
	// failed run left.
	t.Cleanup(func() { killFakeGuests(tmp) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return doctest.Run(t, ctx, doctest.Script{Lines: lines, Dir: root,
		Env: []string{asNibrunnerd + "=1", "TMPDIR=" + tmp, "NIBRUNNER_CONFIG="}})
}

// killFakeGuests kills the process of every fake VMM pidfile under dir.
func killFakeGuests(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pid") {
			return nil
		}
		b, _ := os.ReadFile(p)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		return nil
	})
}
