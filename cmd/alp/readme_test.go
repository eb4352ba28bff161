package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/doctest"
)

// The README's devnet walkthrough, run as written from the checkout with
// this test binary as alp (see TestMain): every line exits as its comment
// says ("exits 2"; 0 when it says nothing), it ends with reconcile exiting
// 0, and it leaves git status as it was.
func TestTheReadmeWalkthroughEndsInSyncAndWritesNothingIntoTheCheckout(t *testing.T) {
	lines := doctest.Block(t, "../../README.md", "To try everything offline")
	if lines[0] != "make build && PATH=$PWD/bin:$PATH" {
		t.Fatalf("the walkthrough's first line is %q; this test stands in for it with its own alp", lines[0])
	}
	lines[0] = "PATH=" + doctest.Tool(t, "alp") + ":$PATH"
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
	out := doctest.Run(t, ctx, doctest.Script{Lines: lines, Dir: root, Env: []string{
		asAlp + "=1", "XDG_CACHE_HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "NO_COLOR=1",
		"ALP_HOST=", "ALP_IDENTITY=", "ALP_NEURON="}})
	for _, says := range []string{
		"note     the declared resources will drift once it executes: node node_08",
		"add-node-08 executed, so the declared fleet now drifts from the registry until it says so:",
		"reconcile: in sync",
	} {
		if !strings.Contains(out, says) {
			t.Errorf("the walkthrough never says %q", says)
		}
	}
	if t.Failed() {
		t.Logf("the walkthrough's output:\n%s", out)
	}
	if after := gitStatus(); after != before {
		t.Errorf("the walkthrough changed the checkout's git status:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
