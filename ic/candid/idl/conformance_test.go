package idl

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// knownFailures names assertions ("file:line") that fail because of a bug
// outside this package, with the reason. It exists only while ic/candid is
// being written; the goal is an empty list. A listed assertion that passes
// fails the test, so the list cannot go stale.
var knownFailures = map[string]string{}

// TestTheOfficialCandidSuitePasses runs every *.test.did file of
// shared/conformance/candid and, when CANDID_TESTS names a folder, every
// *.test.did file there too; *.good.did and *.bad.did files (the suite's
// format for service descriptions) must parse and must be rejected. Each assertion is a subtest named after its line
// and description; each file prints "<file>: N passed, M failed" on standard
// output, which `go test -v` (or `go test` inside the package directory, or
// any failing run) shows.
func TestTheOfficialCandidSuitePasses(t *testing.T) {
	for _, dir := range suiteDirs(t) {
		files, err := filepath.Glob(filepath.Join(dir, "*.test.did"))
		if err != nil {
			t.Fatalf("list %s: %v", dir, err)
		}
		good, _ := filepath.Glob(filepath.Join(dir, "*.good.did"))
		bad, _ := filepath.Glob(filepath.Join(dir, "*.bad.did"))
		if len(files)+len(good)+len(bad) == 0 {
			t.Errorf("no *.test.did, *.good.did or *.bad.did files in %s", dir)
			continue
		}
		sort.Strings(files)
		for _, file := range files {
			runTestFile(t, file)
		}
		for _, file := range good {
			runDidFile(t, file, true)
		}
		for _, file := range bad {
			runDidFile(t, file, false)
		}
	}
}

// suiteDirs is the official suite plus the folder CANDID_TESTS names, if any.
func suiteDirs(t *testing.T) []string {
	dirs := []string{conformanceDir(t)}
	if extra := os.Getenv("CANDID_TESTS"); extra != "" {
		dirs = append(dirs, extra)
	}
	return dirs
}

func runTestFile(t *testing.T, file string) {
	base := filepath.Base(file)
	t.Run(base, func(t *testing.T) {
		tf, err := ReadTestFile(file)
		if err != nil {
			fmt.Printf("%s: 0 passed, 1 failed (cannot parse: %v)\n", base, err)
			t.Fatalf("parse %s: %v", file, err)
		}
		passed, failed, known := 0, 0, 0
		for _, a := range tf.Assertions {
			key := fmt.Sprintf("%s:%d", base, a.Pos.Line)
			err := a.Run()
			reason, isKnown := knownFailures[key]
			switch {
			case err == nil && !isKnown:
				passed++
			case err == nil && isKnown:
				failed++
			case isKnown:
				known++
			default:
				failed++
			}
			t.Run(a.Name(), func(t *testing.T) {
				switch {
				case err == nil && isKnown:
					t.Errorf("%s is listed as a known failure (%s) but passes: remove it from knownFailures", key, reason)
				case isKnown:
					t.Skipf("%s: known failure outside this package (%s): %v", key, reason, err)
				case err != nil:
					t.Errorf("%s: %v", key, err)
				}
			})
		}
		if known > 0 {
			fmt.Printf("%s: %d passed, %d failed (%d known failures skipped)\n", base, passed, failed, known)
		} else {
			fmt.Printf("%s: %d passed, %d failed\n", base, passed, failed)
		}
	})
}

// runDidFile checks a *.good.did (must parse) or *.bad.did (must not) file.
func runDidFile(t *testing.T, file string, good bool) {
	base := filepath.Base(file)
	t.Run(base, func(t *testing.T) {
		_, err := ParseFile(file)
		ok := (err == nil) == good
		if ok {
			fmt.Printf("%s: 1 passed, 0 failed\n", base)
			return
		}
		fmt.Printf("%s: 0 passed, 1 failed\n", base)
		if good {
			t.Errorf("%s: a good service description is rejected: %v", base, err)
		} else {
			t.Errorf("%s: a bad service description is accepted", base)
		}
	})
}
