package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/alpage/devnet"
)

// TestEveryDemoCommandPassesAgainstATwoSubnetDevnet runs the alp steps of
// scripts/demo.sh, in its order and with the exit status it expects of each,
// against `alp devnet --subnets 2`: the NNS canisters on the root subnet,
// a second subnet certified under a delegation beside it.
func TestEveryDemoCommandPassesAgainstATwoSubnetDevnet(t *testing.T) {
	fleet, err := devnet.ParseFleet(devnet.DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := devnet.Start(ctx, devnet.Options{Fleet: fleet, Dir: t.TempDir(), Subnets: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	for _, e := range d.Env() {
		t.Setenv(e.Name, e.Value)
	}
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS("../../examples/fleet")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	for _, step := range []struct {
		stdin string
		want  int
		args  []string
	}{
		{"", 0, []string{"list"}},
		{"", 2, []string{"reconcile"}},
		{"", 2, []string{"plan"}},
		{"", 0, []string{"apply", "add-node-08"}},
		{"", 2, []string{"apply", "sev-on-app1"}},
		{"submit\n", 0, []string{"apply", "add-node-08", "--yes"}},
		{"", 0, []string{"status"}},
		{"", 0, []string{"list"}},
	} {
		out, errOut, err := runAlp(t, step.stdin, step.args...)
		code := 0
		if err != nil {
			code = exitCode(err)
		}
		if code != step.want {
			t.Fatalf("alp %v: exit %d (%v), want %d\n%s%s", step.args, code, err, step.want, out, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "state.json")); err != nil {
		t.Errorf("the submitted proposal was not recorded: %v", err)
	}
}
