package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadProposals writes src as proposals.hcl in a folder of its own and
// loads it within lim.
func loadProposals(t *testing.T, src string, lim Limits) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proposals.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWith(path, lim)
	return err
}

func mustRefuse(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("accepted; want an error saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error lacks %q:\n%.2000s", w, err)
		}
	}
}

func TestAFileOverTheSizeLimitIsRefusedByName(t *testing.T) {
	src := "# " + strings.Repeat("x", 200) + "\n"
	mustRefuse(t, loadProposals(t, src, Limits{MaxFileBytes: 100}), "proposals.hcl:1:1: File too large", "is 203 bytes", "at most 100 bytes")
	if err := loadProposals(t, src, Limits{MaxFileBytes: 203}); err != nil {
		t.Fatalf("a file of exactly the limit was refused: %v", err)
	}
}

func TestTheDefaultSizeLimitIs16MiB(t *testing.T) {
	if (Limits{}).maxFileBytes() != 16<<20 {
		t.Fatalf("default limit %d", (Limits{}).maxFileBytes())
	}
}

func TestAFileThatIsNotUTF8IsRefusedOnceAtItsFirstBadByte(t *testing.T) {
	err := loadProposals(t, "proposal \"p\" {\n  title = \"ok\xff\xfe\"\n}\n", Limits{})
	mustRefuse(t, err, "proposals.hcl:2:14: Invalid character encoding")
	if n := strings.Count(err.Error(), "\n"); n != 0 {
		t.Fatalf("%d more lines for one bad file:\n%s", n, err)
	}
}

func TestNestingDeeperThan256IsRefusedWithFileAndLine(t *testing.T) {
	deep := func(open, body, close string, n int) string {
		return strings.Repeat(open, n) + body + strings.Repeat(close, n)
	}
	for _, tc := range []struct {
		name, src, at string
	}{
		{"a million nested blocks", deep("a {\n", "", "}\n", 1_000_000), "proposals.hcl:257:3:"},
		{"100,000 nested parentheses", "x = " + deep("(", "1", ")", 100_000) + "\n", "proposals.hcl:1:261:"},
		{"100,000 nested objects", "x = " + deep("{a = ", "1", "}", 100_000) + "\n", "proposals.hcl:1:"},
		{"100,000 nested lists", "x = " + deep("[", "1", "]", 100_000) + "\n", "proposals.hcl:1:261:"},
		{"nested template interpolations", "x = " + deep(`"${`, "1", `}"`, 200) + "\n", "proposals.hcl:1:"},
		{"a million ! operators", "x = " + strings.Repeat("!", 1_000_000) + "true\n", "proposals.hcl:1:261:"},
		{"a million - operators, spaced", "x = " + strings.Repeat("- ", 1_000_000) + "1\n", "proposals.hcl:1:517:"},
		{"300,000 chained splats", "x = a" + strings.Repeat("[*].b", 300_000) + "\n", "proposals.hcl:1:1286:"},
		{"257 levels exactly", "x = " + deep("[", "1", "]", 257) + "\n", "proposals.hcl:1:261:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustRefuse(t, loadProposals(t, tc.src, Limits{}), tc.at, "Nesting too deep", "more than 256")
		})
	}
}

func TestNestingOf256AndBracketsInsideStringsCommentsAndHeredocsAreNotCounted(t *testing.T) {
	in := func(open, body, close string, n int) string {
		return strings.Repeat(open, n) + body + strings.Repeat(close, n)
	}
	for _, tc := range []struct{ name, src string }{
		{"256 levels", "x = " + in("[", "1", "]", 256) + "\n"},
		{"splats in many expressions", strings.Repeat("x = a[*].b[ * ].c\n", 1000)},
		{"a long subtraction and identifiers with dashes", "x = " + strings.Repeat("a-b - 1 - -2 - ", 1000) + "1\n"},
		{"braces in a string", `x = "` + strings.Repeat("{[(", 1000) + `"` + "\n"},
		{"escaped quotes and literal templates", `x = "\"{{{ $${ %%{ ` + strings.Repeat("{", 300) + `"` + "\n"},
		{"comments", "# " + strings.Repeat("{", 300) + "\n// " + strings.Repeat("[", 300) + "\n/* " + strings.Repeat("(", 300) + " */\n"},
		{"a heredoc", "x = <<EOT\n" + strings.Repeat("{", 300) + "\n  EOT\ny = <<-END\n  " + strings.Repeat("(", 300) + "\n  END\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkNesting("proposals.hcl", []byte(tc.src), MaxNesting); err.HasErrors() {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestLabelsAndIdsWithInvisibleCharactersAreRefusedWithFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"a bidi override in a label", "\n" + `proposal "add-node-` + "\u202e" + `80" { kind = "membership" }`,
			[]string{"proposals.hcl:2:10: Invalid character in block label", "U+202E", `add-node-\u202e80`}},
		{"a zero-width space in a label", `proposal "a` + "\u200b" + `b" {}`, []string{"proposals.hcl:1:10:", "U+200B"}},
		{"an escaped NUL in a label", `proposal "a\u0000b" {}`, []string{"proposals.hcl:1:10:", "NUL"}},
		{"a control character in a label", `proposal "a\u001bb" {}`, []string{"proposals.hcl:1:10:", "U+001B"}},
		{"a zero-width joiner in a nested id", "proposal \"p\" {\n  membership {\n    remove { id = \"2vxsx\u200d-fae\" }\n  }\n}",
			[]string{"proposals.hcl:3:19: Invalid character in id", "U+200D"}},
		{"a bidi isolate in a literal subnet_id", "proposal \"p\" {\n  membership {\n    subnet_id = \"abc\u2067\"\n  }\n}",
			[]string{"proposals.hcl:3:17: Invalid character in id", "subnet_id holds the invisible character U+2067"}},
		{"a NUL in a list of operators", "proposal \"p\" {\n  remove_node_operators { operators = [\"2vxsx-fae\", \"a\\u0000\"] }\n}",
			[]string{"proposals.hcl:2:53: Invalid character in id", "operators holds a NUL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustRefuse(t, loadProposals(t, tc.src, Limits{}), tc.want...)
		})
	}
	dir := t.TempDir()
	res := "subnet \"app\" {\n  id = \"67htk-vfkxp-gn33q-baibq\u2066\"\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "resources.hcl"), []byte(res), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadResources(dir)
	mustRefuse(t, err, "resources.hcl:2:8: Invalid character in id", "U+2066")
}

func TestAFileOfGarbageListsItsFirstTwentyProblemsAndCountsTheRest(t *testing.T) {
	// Thirty different problems: twenty are listed, the rest counted.
	var src strings.Builder
	for i := range 30 {
		fmt.Fprintf(&src, "proposal \"p%d\" {\n  kind = \"deploy_guestos\"\n  title = \"t\"\n  deploy_guestos {\n    subnet_id = subnet.missing%d.id\n    replica_version_id = \"v\"\n  }\n}\n", i, i)
	}
	err := loadProposals(t, src.String(), Limits{})
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != maxShownErrors+1 || !strings.Contains(lines[len(lines)-1], "more problem(s)") || !strings.Contains(lines[len(lines)-1], "proposals.hcl: and ") {
		t.Fatalf("%d lines, the last %q", len(lines), lines[len(lines)-1])
	}
	// The same problem a hundred times is said once, with its other places.
	err = loadProposals(t, strings.Repeat("§\n", 100), Limits{})
	if err == nil {
		t.Fatal("accepted")
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) > 2 || !strings.Contains(lines[0], "(the same at ") || !strings.Contains(lines[0], " more)") {
		t.Fatalf("repeated garbage:\n%v", err)
	}
}

func TestOneUndeclaredReferenceUsedTwentyTimesIsSaidOnce(t *testing.T) {
	var src strings.Builder
	for i := range 20 {
		fmt.Fprintf(&src, "proposal \"p%d\" {\n  kind = \"deploy_guestos\"\n  title = \"t\"\n  deploy_guestos {\n    subnet_id = subnet.gone.id\n    replica_version_id = \"v\"\n  }\n}\n", i)
	}
	err := loadProposals(t, src.String(), Limits{})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if strings.Count(msg, "subnet.gone is not declared") != 1 || !strings.Contains(msg, "(the same at 19 more place(s): ") || !strings.Contains(msg, " and 14 more)") {
		t.Fatalf("error:\n%s", msg)
	}
}
