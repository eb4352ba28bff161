package idl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// manifest is did/expected.json: which service descriptions the reference
// parser accepts and which it rejects (files marked "helper" are only
// imported by others).
type manifest struct {
	Files []struct {
		File      string `json:"file"`
		Expect    string `json:"expect"`
		Stage     string `json:"stage"`
		RustError string `json:"rust_error"`
	} `json:"files"`
}

// rejectReasons says, for each file the manifest rejects, what our error must
// say, so a file is rejected for the reason the reference rejects it and not
// by accident.
var rejectReasons = map[string]string{
	"bad_comment.did":                 "unclosed comment",
	"bad_import.did":                  `cannot import "no_such_file.did"`,
	"bad_import2.did":                 "has a service constructor",
	"bad_import3.did":                 "duplicate binding for f",
	"bad_import_duplicate_method.did": `duplicate imported method name "f"`,
	"bad_import_no_service.did":       "has no main service",
	"collision_fields.did":            "label '2' hash collision with '2'",
	"collision_fields2.did":           "hash collision with '1832283146'",
	"invalid_cyclic.did":              "has cyclic type definition",
	"not_func.did":                    "method p is a non-function type",
	"not_serv.did":                    "not a service type",
	"oneway.did":                      "oneway function has non-unit return type",
	"surrogate.did":                   "unicode escape out of range D800",
	"undefine.did":                    "unbound type identifier a",
}

func TestTheParserAcceptsAndRejectsTheOfficialDidFilesAsTheManifestSays(t *testing.T) {
	dir := filepath.Join(conformanceDir(t), "did")
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatalf("read the manifest: %v", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("decode the manifest: %v", err)
	}
	n := 0
	for _, f := range m.Files {
		if f.Expect != "accept" && f.Expect != "reject" {
			continue
		}
		n++
		t.Run(f.File, func(t *testing.T) {
			_, err := ParseFile(filepath.Join(dir, f.File))
			switch {
			case f.Expect == "accept" && err != nil:
				t.Errorf("rejected a valid file: %v", err)
			case f.Expect == "reject" && err == nil:
				t.Errorf("accepted an invalid file (reference says %q at stage %s)", f.RustError, f.Stage)
			case err != nil:
				reason, known := rejectReasons[f.File]
				if !known {
					t.Errorf("rejected (%v) but this test does not know why the reference rejects it (%q)", err, f.RustError)
				} else if !strings.Contains(err.Error(), reason) {
					t.Errorf("rejected for another reason: %v (want %q, reference says %q)", err, reason, f.RustError)
				}
			}
		})
	}
	if n < 30 {
		t.Errorf("the manifest lists only %d accept/reject files; expected the full set", n)
	}
}
