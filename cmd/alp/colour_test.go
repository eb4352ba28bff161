package main

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns both ends of a new pseudo-terminal, or skips when the
// machine has none to give.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal end: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

// listOn runs alp list with stdout on the terminal and returns what a reader of the
// terminal's other end sees.
func listOn(t *testing.T, master, tty *os.File) string {
	t.Helper()
	root := newRootCmd()
	root.SetOut(tty)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs([]string{"list", "--config", fixture, "--state", stateWith(t)})
	root.Execute() // exit 2: drift
	master.SetReadDeadline(time.Now().Add(10 * time.Second))
	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("drop-gone-provider")) || !bytes.HasSuffix(got, []byte("\n")) {
		n, err := master.Read(buf)
		if err != nil {
			t.Fatalf("read the terminal: %v after %q", err, got)
		}
		got = append(got, buf[:n]...)
	}
	return string(got)
}

func TestListIsColouredOnATerminalAndNeverWithNO_COLOR(t *testing.T) {
	master, tty := openPTY(t)
	t.Setenv("NO_COLOR", "")
	if out := listOn(t, master, tty); !strings.Contains(out, "\x1b[31mDRIFT\x1b[0m") {
		t.Errorf("on a terminal, DRIFT is not red:\n%q", out)
	}
	t.Setenv("NO_COLOR", "1")
	if out := listOn(t, master, tty); strings.Contains(out, "\x1b[") {
		t.Errorf("with NO_COLOR set, the output is still coloured:\n%q", out)
	}
	// and never into a pipe or a file: the golden test of list compares
	// plain text written into a buffer
}

func TestColouredColumnsLineUpWithTheirHeaderOnATerminal(t *testing.T) {
	master, tty := openPTY(t)
	t.Setenv("NO_COLOR", "")
	out := listOn(t, master, tty)
	if !strings.Contains(out, "\x1b[") {
		t.Fatalf("not coloured:\n%q", out)
	}
	visible := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, "")
	lines := strings.Split(visible, "\r\n")
	header := strings.Index(lines[0], "PROPOSAL")
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "add-n2 ") {
			if at := strings.Index(l, "101"); at != header {
				t.Fatalf("add-n2's proposal id at column %d, its header at %d:\n%s", at, header, visible)
			}
			return
		}
	}
	t.Fatalf("no add-n2 line:\n%s", visible)
}
