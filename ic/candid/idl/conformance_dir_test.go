package idl

import (
	"os"
	"path/filepath"
	"testing"

	"alpnib.dev/internal/testenv"
)

// conformanceDir finds shared/conformance/candid by walking up from the
// package directory (the repository sits next to shared/ on the build
// machines). Without it the test skips on a developer machine and fails in
// the integration lane (NIB_INTEGRATION=1).
func conformanceDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, ok := findUp(wd, filepath.Join("shared", "conformance", "candid"))
	if !ok {
		testenv.Missing(t, "the official Candid suite (shared/conformance/candid) is not in any folder above "+wd)
	}
	return dir
}

// findUp looks for rel in start and each of its parents.
func findUp(start, rel string) (string, bool) {
	for dir := start; ; {
		c := filepath.Join(dir, rel)
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

func TestTheSuiteIsFoundInAParentFolderAndMissedWhenAbsent(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "repo", "ic", "candid", "idl")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := findUp(deep, filepath.Join("shared", "conformance", "candid")); ok {
		t.Fatalf("found a suite that does not exist under %s", root)
	}
	want := filepath.Join(root, "shared", "conformance", "candid")
	if err := os.MkdirAll(want, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := findUp(deep, filepath.Join("shared", "conformance", "candid")); !ok || got != want {
		t.Errorf("findUp = %q, %v; want %q", got, ok, want)
	}
}
