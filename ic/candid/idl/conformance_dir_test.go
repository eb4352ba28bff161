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
// the integration lane.
func conformanceDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		c := filepath.Join(dir, "shared", "conformance", "candid")
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			testenv.Missing(t, "the official Candid suite (shared/conformance/candid) is not above "+mustWd())
			return ""
		}
		dir = parent
	}
}

func mustWd() string {
	d, _ := os.Getwd()
	return d
}
