package main

import (
	"bytes"
	"strings"
	"testing"
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

func TestVersionPrintsTheBinaryNameAndAVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil {
		t.Fatalf("alp version: %v", err)
	}
	if !strings.HasPrefix(out, "alp ") || len(strings.TrimSpace(out)) <= len("alp") {
		t.Fatalf("alp version printed %q", out)
	}
}

func TestAnUnknownCommandIsAnError(t *testing.T) {
	if _, err := execute(t, "frobnicate"); err == nil {
		t.Fatal("alp frobnicate succeeded")
	}
}
