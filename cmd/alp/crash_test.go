package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/term"
)

func panicking() *cobra.Command {
	return &cobra.Command{Use: "alp", SilenceUsage: true, SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error { panic("index out of range [3] with length 3\x1b[2J") }}
}

func TestARecoveredPanicIsAnInternalErrorThatExitsOneNotTwo(t *testing.T) {
	var stderr bytes.Buffer
	if code := runRoot(context.Background(), panicking(), nil, &stderr); code != 1 {
		t.Fatalf("exit %d after a panic, want 1 (2 means flagged)", code)
	}
	out := stderr.String()
	if !strings.HasPrefix(out, `alp: internal error: index out of range [3] with length 3\x1b[2J`+"\n") || !strings.Contains(out, "please report it") || !strings.Contains(out, "goroutine ") {
		t.Fatalf("stderr:\n%s", out)
	}
}

// The same through a real process: its exit status is 1.
func TestAPanickingAlpProcessExitsOne(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicHelperProcess$")
	cmd.Env = append(os.Environ(), "ALP_PANIC_HELPER=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the process ended with %v, want exit status 1\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "alp: internal error: index out of range") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

// TestPanicHelperProcess is not a test: it is an alp whose command panics,
// run by TestAPanickingAlpProcessExitsOne.
func TestPanicHelperProcess(t *testing.T) {
	if os.Getenv("ALP_PANIC_HELPER") != "1" {
		return
	}
	os.Exit(runRoot(context.Background(), panicking(), nil, os.Stderr))
}

func TestAnErrorIsPrintedWithItsHiddenCharactersEscaped(t *testing.T) {
	root := &cobra.Command{Use: "alp", SilenceUsage: true, SilenceErrors: true,
		RunE: func(*cobra.Command, []string) error { return errors.New("no proposal named add-\u202e80") }}
	var stderr bytes.Buffer
	if code := runRoot(context.Background(), root, nil, &stderr); code != 1 || stderr.String() != `alp: no proposal named add-\u202e80`+"\n" {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

func TestReportsEscapeHiddenCharactersInNamesFromElsewhere(t *testing.T) {
	// state.json and the dashboard are not ours: a recorded name with a bidi
	// override, or a failure reason that sets the terminal's title, shows
	// as escapes, and the columns stay columns.
	rows := []statusRow{{Name: "drop-\u202enode\t12", ProposalID: 7, Status: "failed", Failure: "gone\x1b]0;pwned\x07"}}
	var out bytes.Buffer
	if err := renderSafe(&out, func(w io.Writer, paint term.Painter) error { return renderStatus(w, paint, rows) }); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`drop-\u202enode\x0912  7`, `failure: gone\x1b]0;pwned\x07`} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks %q:\n%s", want, got)
		}
	}
	if strings.ContainsAny(got, "\u202e\x1b\x07") {
		t.Errorf("a hidden character reached the output:\n%q", got)
	}
}

func TestHostileConfigurationFilesExitOneNamingTheFile(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		args      []string
		says      string
	}{
		{"a million nested blocks", strings.Repeat("a {\n", 1_000_000) + strings.Repeat("}\n", 1_000_000), nil, "proposals.hcl:257:3: Nesting too deep"},
		{"100,000 nested parentheses", "x = " + strings.Repeat("(", 100_000) + strings.Repeat(")", 100_000), nil, "proposals.hcl:1:261: Nesting too deep"},
		{"bytes that are not text", "\x00\xff\xfe garbage", nil, "proposals.hcl:1:2: Invalid character encoding"},
		{"a file over the limit", strings.Repeat("# comment\n", 20), []string{"--max-config-bytes", "100"}, "proposals.hcl is 200 bytes; alp reads configuration files of at most 100 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "proposals.hcl")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			args := append([]string{"list", "--config", path}, tc.args...)
			if code := runRoot(context.Background(), newRootCmd(), args, &stderr); code != 1 || !strings.Contains(stderr.String(), tc.says) {
				t.Fatalf("exit %d, want 1 saying %q:\n%.1000s", code, tc.says, stderr.String())
			}
		})
	}
}
