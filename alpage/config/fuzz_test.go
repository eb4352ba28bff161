package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary resources.hcl and proposals.hcl to Load: whatever
// the input, it returns a config or an error whose every line names its
// place, and never panics.
func FuzzLoad(f *testing.F) {
	for _, seed := range [][2]string{
		{"testdata/fleet/resources.hcl", "testdata/fleet/proposals.hcl"},
		{"testdata/fleet/resources/nodes.hcl", "testdata/fleet/proposals.hcl"},
		{"testdata/fleet/resources/guestos.hcl", ""},
	} {
		res, _ := os.ReadFile(seed[0])
		var props []byte
		if seed[1] != "" {
			props, _ = os.ReadFile(seed[1])
		}
		f.Add(string(res), string(props))
	}
	f.Add(`subnet "a" { id = subnet.a.id }`, `proposal "p" { kind = "membership" }`)
	dir := f.TempDir() // one folder, rewritten by each input
	f.Fuzz(func(t *testing.T, resources, proposals string) {
		if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(resources), 0o644); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "proposals.hcl")
		if err := os.WriteFile(path, []byte(proposals), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err == nil {
			if c == nil {
				t.Fatal("no config and no error")
			}
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.Contains(line, ".hcl") {
				t.Fatalf("an error line names no file: %q", line)
			}
		}
	})
}
