package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/hostconfig"
)

func TestConfigCheckAcceptsTheExampleAndTheDefault(t *testing.T) {
	def := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(def, hostconfig.Default(t.TempDir()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../../examples/config.toml", def} {
		if out, err := execute(t, "config", "check", path); err != nil || out != "ok\n" {
			t.Errorf("config check %s: %q, %v", path, out, err)
		}
	}
}

func TestConfigCheckPrintsEachReasonAndTheKeyATypoWasMeantToBe(t *testing.T) {
	data, err := os.ReadFile("../../examples/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "max_apps = 1000", "max_apps = 1000\nmax_concurent_vm_starts = 4", 1)
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "config", "check", path)
	if !errors.Is(err, errConfigRefused) {
		t.Fatalf("config check accepted a broken file: %v\n%s", err, out)
	}
	want := "unknown key max_concurent_vm_starts: did you mean max_concurrent_vm_starts?\n"
	if out != want {
		t.Fatalf("config check printed:\n%s\nwant:\n%s", out, want)
	}
}

func TestConfigCheckOfAMissingFileSaysItCouldNotReadIt(t *testing.T) {
	_, err := execute(t, "config", "check", filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || errors.Is(err, errConfigRefused) || !strings.Contains(err.Error(), "reading the host configuration") {
		t.Fatalf("got %v", err)
	}
}
