package testenv

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sharedConformance finds shared/conformance beside or above the checkout
// (CI lays shared/ beside the clone).
func sharedConformance(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "conformance")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			Missing(t, "shared/conformance is not in any folder above the checkout")
			return ""
		}
		dir = parent
	}
}

// Packages keep copies of the shared vectors in their testdata so that
// their tests run anywhere; this keeps every copy byte-identical to the
// shared suite, which is never edited.
func TestVendoredConformanceVectorsMatchTheSharedSuite(t *testing.T) {
	shared := sharedConformance(t)
	root := filepath.Join("..", "..")
	copies := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Base(filepath.Dir(path)) != "testdata" || strings.HasSuffix(d.Name(), ".md") {
			return nil // the suite's README and SOURCES are its prose, not vectors
		}
		original := filepath.Join(shared, d.Name())
		want, err := os.ReadFile(original)
		if err != nil {
			return nil // not a name of the shared suite
		}
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		copies++
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s; copy the shared file again, never edit it", path, original)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if copies == 0 {
		t.Fatal("found no copy of a shared conformance vector; the walk is looking in the wrong place")
	}
}
