package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeWalkthrough is the fenced block of README.md after its line
// "To try everything offline", split into lines.
func readmeWalkthrough(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "To try everything offline")
	if i < 0 {
		t.Fatal(`README.md has no "To try everything offline" walkthrough`)
	}
	s = s[i:]
	start := strings.Index(s, "```sh\n")
	end := strings.Index(s[start+6:], "```\n")
	if start < 0 || end < 0 {
		t.Fatal("the walkthrough's ```sh block is not closed")
	}
	return strings.Split(strings.TrimSuffix(s[start+6:start+6+end], "\n"), "\n")
}

var exitsComment = regexp.MustCompile(`#.*\bexits ([0-9])\b`)

// The README's devnet walkthrough, run as written from the checkout: every
// line exits as its comment says ("exits 2"; 0 when it says nothing), it
// ends with reconcile exiting 0, and it leaves git status as it was.
func TestTheReadmeWalkthroughEndsInSyncAndWritesNothingIntoTheCheckout(t *testing.T) {
	lines := readmeWalkthrough(t)
	if lines[0] != "make build && PATH=$PWD/bin:$PATH" {
		t.Fatalf("the walkthrough's first line is %q; this test stands in for it with its own alp", lines[0])
	}
	// alp is this test binary, which runs as alp under asAlp (TestMain).
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(bin, "alp")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gitStatus := func() string {
		out, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain").CombinedOutput()
		if err != nil {
			t.Fatalf("git status: %v\n%s", err, out)
		}
		return string(out)
	}
	before := gitStatus()

	var script strings.Builder
	want := map[int]int{}
	for i, l := range lines[1:] {
		n := i + 2
		fmt.Fprintf(&script, "%s\necho \"@@ line %d exit $?\"\n", l, n)
		want[n] = 0
		if m := exitsComment.FindStringSubmatch(l); m != nil {
			want[n], _ = strconv.Atoi(m[1])
		}
	}
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = root
	sh.Stdin = strings.NewReader("")
	sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "XDG_CACHE_HOME="+t.TempDir(), "TMPDIR="+t.TempDir(), "NO_COLOR=1", asAlp+"=1")
	for _, name := range []string{"ALP_HOST", "ALP_IDENTITY", "ALP_NEURON"} {
		sh.Env = append(sh.Env, name+"=")
	}
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	// The devnet the walkthrough starts in the background goes with it,
	// whatever line fails.
	defer syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	if err := sh.Wait(); err != nil {
		t.Fatalf("the walkthrough: %v\n%s", err, out.String())
	}
	got := map[int]int{}
	for _, m := range regexp.MustCompile(`@@ line ([0-9]+) exit ([0-9]+)`).FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		got[n], _ = strconv.Atoi(m[2])
	}
	for n, code := range want {
		if c, ok := got[n]; !ok || c != code {
			t.Errorf("line %d (%s): exit %d (ran: %v), the README says %d", n, lines[n-1], c, ok, code)
		}
	}
	for _, says := range []string{
		"note     the declared resources will drift once it executes: node node_08",
		"add-node-08 executed, so the declared fleet now drifts from the registry until it says so:",
		"reconcile: in sync",
	} {
		if !strings.Contains(out.String(), says) {
			t.Errorf("the walkthrough never says %q", says)
		}
	}
	if t.Failed() {
		t.Logf("the walkthrough's output:\n%s", out.String())
	}
	if after := gitStatus(); after != before {
		t.Errorf("the walkthrough changed the checkout's git status:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
