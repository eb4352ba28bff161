package doctest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLinesAreHeldToTheExitStatusTheirCommentStates(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "doc.md")
	os.WriteFile(doc, []byte("intro\n```sh\ntrue\nfalse   # exits 1\ncat <<'EOF'\nin a heredoc: exit 3\nEOF\n```\ntext\n```sh\necho done\n```\n"), 0o644)
	lines := Lines(t, doc)
	if len(lines) != 6 || lines[5] != "echo done" {
		t.Fatalf("lines: %q", lines)
	}
	if b := Block(t, doc, "text"); len(b) != 1 || b[0] != "echo done" {
		t.Fatalf("the block after text: %q", b)
	}
	out := Run(t, context.Background(), Script{Lines: lines, Dir: t.TempDir()})
	if !strings.Contains(out, "in a heredoc: exit 3\ndone\n") || strings.Contains(out, "@@doctest") {
		t.Fatalf("output: %q", out)
	}

	// A line whose status differs from its comment fails the test.
	// A line whose status differs from its comment fails the test, and so
	// does one the script never reached.
	rec := &recorder{TB: t}
	Run(rec, context.Background(), Script{Lines: []string{"true   # exits 2", "exit 0"}, Dir: t.TempDir()})
	if len(rec.errs) != 2 || !strings.Contains(rec.errs[0], "line 1 exited 0, its comment says 2") || !strings.Contains(rec.errs[1], "line 2 never ran") {
		t.Fatalf("errors: %q", rec.errs)
	}
}

// recorder keeps the errors Run reports instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}

func (r *recorder) Helper() {}
