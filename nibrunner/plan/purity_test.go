package plan

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// What no package in plan's closure may import: plan decides from what it
// is handed, so it touches no file, process, network or database, and the
// host's machinery (the VMM, slots, the database) stays out of it.
var (
	// impureStd are the standard packages that reach the outside world.
	impureStd = map[string]string{
		"os":            "file I/O and the process",
		"os/exec":       "processes",
		"io/ioutil":     "file I/O",
		"io/fs":         "file I/O",
		"path/filepath": "file paths on this host",
		"syscall":       "the kernel",
		"net":           "the network",
		"net/http":      "the network",
		"database/sql":  "a database",
	}
	// impureModule are the module's packages of the host's machinery.
	impureModule = map[string]string{
		"alpnib.dev/nibrunner/vmm":  "the VMM",
		"alpnib.dev/nibrunner/slot": "slot assignment, which pulls the VMM in",
		"alpnib.dev/nibrunner/db":   "the daemon's database",
	}
)

// planClosure is every package of this module plan depends on (plan
// included), each with its direct imports, as go list tells.
func planClosure(t *testing.T) map[string][]string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-deps", "-f",
		"{{if not .Standard}}{{.ImportPath}} {{join .Imports \" \"}}{{end}}", "alpnib.dev/nibrunner/plan").Output()
	if err != nil {
		t.Fatalf("go list -deps alpnib.dev/nibrunner/plan: %v", err)
	}
	pkgs := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			pkgs[f[0]] = f[1:]
		}
	}
	if _, ok := pkgs["alpnib.dev/nibrunner/plan"]; !ok {
		t.Fatalf("go list did not list plan itself: %q", out)
	}
	return pkgs
}

// TestThePlannerImportsNothingThatTouchesTheHost pins plan's purity: no
// package it depends on (itself included) imports the VMM, the slot
// table, the database, a third-party package, or a standard package that
// does file, process or network I/O.
func TestThePlannerImportsNothingThatTouchesTheHost(t *testing.T) {
	for pkg, imports := range planClosure(t) {
		if why, bad := impureModule[pkg]; bad {
			t.Errorf("plan depends on %s (%s)", pkg, why)
		}
		if !strings.HasPrefix(pkg, "alpnib.dev/") {
			t.Errorf("plan depends on %s, a package outside the module and the standard library", pkg)
			continue
		}
		for _, im := range imports {
			if why, bad := impureStd[im]; bad {
				t.Errorf("%s, in plan's closure, imports %s (%s)", pkg, im, why)
			}
		}
	}
}

// TestThePlannerSaysNoSentence pins the split of deciding from saying:
// plan imports no fmt, so no sentence is formatted in it; its status
// functions return typed reasons, which plan/explain words.
func TestThePlannerSaysNoSentence(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "list", "-f", "{{join .Imports \" \"}}", "alpnib.dev/nibrunner/plan").Output()
	if err != nil {
		t.Fatalf("go list alpnib.dev/nibrunner/plan: %v", err)
	}
	for _, im := range strings.Fields(string(out)) {
		if im == "fmt" {
			t.Fatal("plan imports fmt: a sentence belongs in plan/explain, and plan returns the reason it words")
		}
	}
}
