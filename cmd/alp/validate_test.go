package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exampleCopy copies examples/fleet into a temporary folder, with edit
// applied to the named file's content when it is not nil.
func exampleCopy(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"proposals.hcl", "resources.hcl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/fleet", f))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if f == name && edit != nil {
			if s = edit(s); s == string(b) {
				t.Fatalf("the edit changed nothing in examples/fleet/%s", f)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestValidatePassesOnTheExampleFleetWithoutTheNetworkAndNotesEachMissingURL(t *testing.T) {
	// The host answers nothing: validate must not need it.
	out, errOut, err := runSplit("validate", "--config", "../../examples/fleet/proposals.hcl", "--host", "http://127.0.0.1:1")
	if err != nil {
		t.Fatalf("validate: exit %d (%v)\n%s", exitCode(err), err, errOut)
	}
	if want := "The configuration is valid: 4 proposal(s), 20 resource(s).\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
	if !strings.Contains(errOut, `note: ../../examples/fleet/proposals.hcl:10: proposal "add-node-08" has no url`) {
		t.Errorf("no note names the proposal without a url and its line:\n%s", errOut)
	}
}

func TestValidateNamesTheLineOfAnUndeclaredReferenceAndExitsOne(t *testing.T) {
	dir := exampleCopy(t, "resources.hcl", func(s string) string {
		return strings.Replace(s, "operator = node_operator.zh1_ops.id", "operator = node_operator.nosuch.id", 1)
	})
	out, _, err := runSplit("validate", "--config", filepath.Join(dir, "proposals.hcl"))
	if exitCode(err) != 1 || err == nil {
		t.Fatalf("exit %d (%v), want 1", exitCode(err), err)
	}
	src, _ := os.ReadFile(filepath.Join(dir, "resources.hcl"))
	line := strings.Count(string(src[:strings.Index(string(src), "node_operator.nosuch")]), "\n") + 1
	want := fmt.Sprintf("%s:%d:14: Reference", filepath.Join(dir, "resources.hcl"), line) + " to an undeclared block: node_operator.nosuch is not declared"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q\nwant it to contain %q", err, want)
	}
	if out != "" {
		t.Errorf("an invalid configuration printed %q", out)
	}
}

func TestValidateChecksTheResourcesAloneWhenThereIsNoProposalsFile(t *testing.T) {
	dir := exampleCopy(t, "", nil)
	if err := os.Remove(filepath.Join(dir, "proposals.hcl")); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runSplit("validate", "--config", filepath.Join(dir, "proposals.hcl"))
	if err != nil {
		t.Fatalf("validate: exit %d (%v)\n%s", exitCode(err), err, errOut)
	}
	if want := "The configuration is valid: 0 proposal(s), 20 resource(s).\n"; out != want {
		t.Errorf("stdout %q, want %q", out, want)
	}
}
