package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/hostconfig"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestCheckPrintsOkOrEachReasonOnItsOwnLine runs check on every document
// in testdata/check and compares what it prints, and its exit status, with
// the .golden file beside it.
func TestCheckPrintsOkOrEachReasonOnItsOwnLine(t *testing.T) {
	inputs, err := filepath.Glob("testdata/check/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			out, err := execute(t, "check", in)
			exit := 0
			if err != nil {
				if !errors.Is(err, errRefused) {
					t.Fatalf("check failed for another reason: %v", err)
				}
				exit = 1
			}
			got := fmt.Sprintf("%sexit %d\n", out, exit)
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("check %s printed:\n%s\nwant:\n%s", in, got, want)
			}
		})
	}
}

func TestCheckAcceptsEveryExample(t *testing.T) {
	examples, _ := filepath.Glob("../../examples/desired*.json")
	if len(examples) == 0 {
		t.Fatal("no examples")
	}
	for _, ex := range examples {
		out, err := execute(t, "check", ex)
		if err != nil || out != "ok\n" {
			t.Errorf("check %s: %q, %v", ex, out, err)
		}
	}
}

func TestCheckOfAMissingFileSaysItCouldNotReadIt(t *testing.T) {
	_, err := execute(t, "check", filepath.Join(t.TempDir(), "nope.json"))
	if err == nil || errors.Is(err, errRefused) || !strings.Contains(err.Error(), "reading the document") {
		t.Fatalf("got %v", err)
	}
}

func TestCheckWithAHostConfigurationNamesTheInstancesThatHostWouldFail(t *testing.T) {
	// The default configuration has no proxy: the example's hostnames and
	// ports cannot be carried, yet the document is accepted.
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, hostconfig.Default(""), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "check", "--config", cfg, "../../examples/desired-on-request.json")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	want := "ok\n" +
		"instances[0] (wiki): it names 1 hostname (wiki.apps.example.net) but this host has no [proxy.http] to route them\n" +
		"instances[1] (game): it asks for 2 ports beside HTTP but this host has no [proxy.raw] to carry them; it names 1 hostname (game.apps.example.net) but this host has no [proxy.http] to route them\n"
	if out != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out, want)
	}
	full, err := execute(t, "check", "--config", "../../examples/config.toml", "../../examples/desired-on-request.json")
	if err != nil || full != "ok\n" {
		t.Fatalf("with both proxies: %q %v", full, err)
	}
}
