package main

import (
	"strings"
	"testing"
)

func TestInstallTwiceSaysTheSecondRunChangedNothing(t *testing.T) {
	root := t.TempDir()
	first, err := execute(t, "install", "--root", root, "--binary", "/usr/local/bin/nibrunnerd")
	if err != nil {
		t.Fatalf("first install: %v\n%s", err, first)
	}
	if !strings.Contains(first, "done: wrote the default configuration to "+root+"/etc/nibrunner/config.toml") ||
		!strings.Contains(first, "Left to do:") {
		t.Fatalf("first install printed:\n%s", first)
	}
	second, err := execute(t, "install", "--root", root, "--binary", "/usr/local/bin/nibrunnerd")
	if err != nil {
		t.Fatalf("second install: %v\n%s", err, second)
	}
	if !strings.HasPrefix(second, "Nothing changed: this host was already installed.\n") || strings.Contains(second, "done:") {
		t.Fatalf("second install printed:\n%s", second)
	}
}

func TestInstallIgnoresNIBRUNNER_CONFIGWhenARootIsGiven(t *testing.T) {
	t.Setenv("NIBRUNNER_CONFIG", "/nonexistent/elsewhere.toml")
	root := t.TempDir()
	out, err := execute(t, "install", "--root", root, "--binary", "/bin/nibrunnerd")
	if err != nil || !strings.Contains(out, root+"/etc/nibrunner/config.toml") {
		t.Fatalf("%v\n%s", err, out)
	}
}
