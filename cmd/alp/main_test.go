package main

import (
	"bytes"
	"strings"
	"testing"

	"alpnib.dev/internal/version"
)

func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestHelpListsTheCommandsThatExist(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil {
		t.Fatalf("alp --help: %v", err)
	}
	for _, cmd := range newRootCmd().Commands() {
		if !strings.Contains(out, cmd.Name()) {
			t.Errorf("alp --help does not list %q:\n%s", cmd.Name(), out)
		}
	}
	if !strings.Contains(out, "version") {
		t.Errorf("alp --help does not list version:\n%s", out)
	}
}

func TestVersionAndTheVersionFlagPrintTheBareVersionIntoAPipe(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := execute(t, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", "alp", args, err)
		}
		if out != version.String()+"\n" {
			t.Fatalf("%s %v printed %q, want the bare version on a line", "alp", args, out)
		}
	}
}

func TestAnUnknownCommandIsAnError(t *testing.T) {
	if _, err := execute(t, "frobnicate"); err == nil {
		t.Fatal("alp frobnicate succeeded")
	}
}

func TestHelpSaysWhatEachExitStatusMeansAndThatPlansTwoIsNotChanges(t *testing.T) {
	out, err := execute(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Exit status", "  0  done, nothing flagged", "  1  error", "  2  flagged", "  3  apply: the proposal WAS submitted", "fmt -check: a file is not formatted"} {
		if !strings.Contains(out, want) {
			t.Errorf("alp --help lacks %q:\n%s", want, out)
		}
	}
	out, err = execute(t, "plan", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `2 does not mean "there are`) || !strings.Contains(out, "proposal is ready to submit exits 0") {
		t.Errorf("plan --help does not say that 2 is not \"there are changes\":\n%s", out)
	}
}
