package hostconfig

import (
	"os"
	"strings"
	"testing"
)

const referencePath = "../../docs/config-toml.md"

func TestTheConfigReferenceIsCurrent(t *testing.T) {
	want, err := ReferenceMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(referencePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v; run go generate ./nibrunner/hostconfig", err)
	}
	if string(got) != string(want) {
		t.Fatal("docs/config-toml.md is stale; run go generate ./nibrunner/hostconfig")
	}
}

func TestTheConfigReferenceDescribesEveryKeyTheFullExampleSets(t *testing.T) {
	secs, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, s := range secs {
		documented["["+s.Name+"]"] = true
		for _, k := range s.Keys {
			documented[k.Path] = k.Doc != ""
		}
	}
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			key := dotted(prefix, k)
			if sub, ok := v.(map[string]any); ok {
				if !documented["["+key+"]"] {
					t.Errorf("section [%s] is not in the reference", key)
				}
				walk(key, sub)
				continue
			}
			if !documented[key] {
				t.Errorf("key %s is not described in the reference", key)
			}
		}
	}
	walk("", treeOf(t, readFull(t)))
}

func TestTheReferenceSpeaksInKeysNotGoNames(t *testing.T) {
	md, err := ReferenceMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	for _, goName := range []string{"StateDir", "MaxConcurrentVMStarts", "BodyTimeoutMs", "UIDBase"} {
		if strings.Contains(string(md), goName) {
			t.Errorf("the reference names the Go field %s", goName)
		}
	}
}
