package term

import (
	"bytes"
	"os"
	"testing"
)

func TestABufferIsNeverPainted(t *testing.T) {
	if got := For(&bytes.Buffer{}).Paint(Red, "drift"); got != "drift" {
		t.Fatalf("painted %q into a buffer", got)
	}
}

func TestAFileThatIsNoTerminalIsNotPainted(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("a regular file counted as a terminal")
	}
}

func TestAnEnabledPainterWrapsAndResets(t *testing.T) {
	if got := (Painter{enabled: true}).Paint(Green, "ok"); got != "\x1b[32mok\x1b[0m" {
		t.Fatalf("Paint = %q", got)
	}
}

func TestNoColorWinsOverATerminal(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	if For(os.Stdout).enabled {
		t.Fatal("NO_COLOR set but colour enabled")
	}
}
