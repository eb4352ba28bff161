package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
