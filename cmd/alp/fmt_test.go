package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFmtCheckPassesOnTheExamplesAndEveryTestdataFolder(t *testing.T) {
	out, errOut, err := runSplit("fmt", "-check", "-recursive", "../../examples", "testdata", "../../alpage/config/testdata")
	if err != nil {
		t.Fatalf("exit %d (%v): a checked-in file is not formatted; run alp fmt -recursive on it\n%s%s", exitCode(err), err, out, errOut)
	}
	if out != "" {
		t.Errorf("fmt -check listed files although all are formatted:\n%s", out)
	}
}

// misformattedFleet is a copy of examples/fleet whose first subnet's
// attributes lost their alignment.
func misformattedFleet(t *testing.T) (dir, resources string, src []byte) {
	t.Helper()
	dir = t.TempDir()
	for _, name := range []string{"proposals.hcl", "resources.hcl"} {
		b, err := os.ReadFile(filepath.Join("../../examples/fleet", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "resources.hcl" {
			if !strings.Contains(string(b), "  label       = \"Application subnet 1\"\n") {
				t.Fatal("examples/fleet/resources.hcl changed; pick another line to misalign")
			}
			b = []byte(strings.Replace(string(b), "  label       = \"Application subnet 1\"\n", "  label = \"Application subnet 1\"\n", 1))
			src = b
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "resources.hcl"), src
}

func TestFmtCheckFailsWithThreeOnAMisformattedCopyListsItAndWritesNothing(t *testing.T) {
	dir, resources, src := misformattedFleet(t)
	out, _, err := runSplit("fmt", "-check", dir)
	if exitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3: a file is not formatted", exitCode(err), err)
	}
	if out != resources+"\n" {
		t.Errorf("fmt -check listed %q, want only %s", out, resources)
	}
	if b, _ := os.ReadFile(resources); string(b) != string(src) {
		t.Error("fmt -check rewrote the file")
	}
}

func TestFmtDiffShowsTheRealignedLinesAsAUnifiedDiff(t *testing.T) {
	dir, resources, _ := misformattedFleet(t)
	out, _, err := runSplit("fmt", "--check", "--diff", "--list=false", dir)
	if exitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3", exitCode(err), err)
	}
	label := strings.TrimPrefix(filepath.ToSlash(resources), "/")
	want := "--- old/" + label + "\n+++ new/" + label + "\n" +
		"@@ -5,7 +5,7 @@\n" +
		" \n" +
		" subnet \"app1\" {\n" +
		"   id          = \"x6rmp-4m3v3-io5bv-ve6hr-5pvmp-iacd3-zxsfc-l7hee-luzm7-6ltzy-xqe\"\n" +
		"-  label = \"Application subnet 1\"\n" +
		"+  label       = \"Application subnet 1\"\n" +
		"   type        = \"application\"\n" +
		"   sev_enabled = false\n" +
		" }\n"
	if out != want {
		t.Errorf("fmt -diff wrote\n%s\nwant\n%s", out, want)
	}
}

func TestFmtRewritesTheFileCanonicallyAndThenCheckPasses(t *testing.T) {
	dir, resources, _ := misformattedFleet(t)
	out, _, err := runSplit("fmt", dir)
	if err != nil {
		t.Fatalf("fmt: %v", err)
	}
	if out != resources+"\n" {
		t.Errorf("fmt listed %q, want the file it rewrote, %s", out, resources)
	}
	want, _ := os.ReadFile("../../examples/fleet/resources.hcl")
	if got, _ := os.ReadFile(resources); string(got) != string(want) {
		t.Errorf("fmt wrote\n%s\nwant the canonical example back", got)
	}
	if out, _, err := runSplit("fmt", "-check", dir); err != nil || out != "" {
		t.Errorf("fmt -check after fmt: exit %d (%v), listed %q", exitCode(err), err, out)
	}
}

func TestFmtDefaultsToTheFolderOfConfig(t *testing.T) {
	dir, resources, _ := misformattedFleet(t)
	out, _, err := runSplit("--config", filepath.Join(dir, "proposals.hcl"), "fmt", "-check")
	if exitCode(err) != 3 || out != resources+"\n" {
		t.Fatalf("fmt -check with --config: exit %d (%v), listed %q, want 3 and %s", exitCode(err), err, out, resources)
	}
}

func TestFmtNamesTheLineOfAFileThatDoesNotParseAndLeavesItAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resources.hcl")
	src := "subnet \"app1\" {\n  id = \"x\"\n  label = \n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := runSplit("fmt", path)
	if exitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), path+":3:") {
		t.Fatalf("exit %d (%v), want 1 and an error naming %s:3", exitCode(err), err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Error("fmt rewrote a file that does not parse")
	}
}
