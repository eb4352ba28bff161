package idl

import (
	"encoding/json"
	"os"
	"path/filepath"
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
				t.Logf("rejected as expected: %v", err)
			}
		})
	}
	if n < 30 {
		t.Errorf("the manifest lists only %d accept/reject files; expected the full set", n)
	}
}
