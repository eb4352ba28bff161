package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fleet declared twice (issue 38): an executed proposal moves the live
// fleet away from resources.hcl. Preflight says so before it is made,
// status names the line after it executed, and --generate notes the stale
// declaration instead of proposing to undo it; once resources.hcl says
// what executed, the drift it caused is gone.
func TestAnExecutedProposalIsNeverUndoneByGenerateAndItsStaleLineIsNamed(t *testing.T) {
	d := startExampleDevnet(t)
	for _, e := range d.Env() {
		t.Setenv(e.Name, e.Value)
	}
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := copyFiles(t, "../../examples/fleet", "resources.hcl", "proposals.hcl")
	config, statePath := filepath.Join(dir, "proposals.hcl"), filepath.Join(dir, "state.json")
	stale := "node node_08 (" + filepath.Join(dir, "resources.hcl") + ":100) is declared in no subnet, not in subnet app1: declare subnet = subnet.app1.id"

	out, errOut, err := runAlp(t, "", "plan", "add-node-08", "--config", config, "--state", statePath)
	if err != nil || !strings.Contains(out, "note     the declared resources will drift once it executes: "+stale) {
		t.Fatalf("plan did not say which line the proposal moves away from (%v):\n%s%s", err, out, errOut)
	}
	if out, errOut, err := runAlp(t, "", "apply", "add-node-08", "--auto-approve", "--config", config, "--state", statePath); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = runAlp(t, "", "status", "--config", config, "--state", statePath)
	if err != nil || !strings.Contains(out, "add-node-08 executed, so the declared fleet now drifts from the registry until it says so:\n  "+stale+"\n") {
		t.Fatalf("status did not name the stale line (%v):\n%s%s", err, out, errOut)
	}
	gen := filepath.Join(dir, "generated.hcl")
	_, errOut, err = runAlp(t, "", "plan", "--generate", "--out", gen, "--config", config, "--state", statePath)
	if err != nil {
		t.Fatalf("plan --generate: %v\n%s", err, errOut)
	}
	if b, _ := os.ReadFile(gen); strings.Contains(string(b), "remove") {
		t.Fatalf("plan --generate proposed to undo the executed add-node-08:\n%s", b)
	}
	if !strings.Contains(errOut, "note: not generating remove-node-08-from-app1: it would undo add-node-08 (proposal 123, executed); the declaration is stale: "+stale) {
		t.Fatalf("plan --generate did not note the stale declaration:\n%s", errOut)
	}

	// Declare what executed: the drift it caused is gone.
	res := filepath.Join(dir, "resources.hcl")
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	const node08 = "node \"node_08\" {\n"
	if !strings.Contains(string(b), node08) {
		t.Fatal("examples/fleet/resources.hcl changed: node_08's block not found")
	}
	if err := os.WriteFile(res, []byte(strings.Replace(string(b), node08, node08+"  subnet   = subnet.app1.id\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runAlp(t, "", "reconcile", "--config", config, "--state", statePath)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 2 || strings.Contains(out, "node_08") || !strings.Contains(out, "node_05") {
		t.Fatalf("reconcile after declaring node_08 in app1: %v, want only node_05's built-in drift:\n%s", err, out)
	}
	out, _, _ = runAlp(t, "", "status", "--config", config, "--state", statePath)
	if strings.Contains(out, "drifts from the registry") {
		t.Fatalf("status still names a stale line once resources.hcl says what executed:\n%s", out)
	}
}
