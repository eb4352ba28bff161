// Package doctest runs the shell lines of a document as a newcomer would
// paste them, so a README or a guide cannot rot: each line's exit status
// is recorded, and held to the one its comment states ("# exits 2"; 0
// when it states none).
package doctest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Lines are the lines of every ```sh block of the document at path, in
// order.
func Lines(t testing.TB, path string) []string {
	t.Helper()
	out := blocks(t, path, "", -1)
	if len(out) == 0 {
		t.Fatalf("%s has no ```sh block", path)
	}
	return out
}

// Block is the lines of the first ```sh block of the document at path
// after its first line containing after.
func Block(t testing.TB, path, after string) []string {
	t.Helper()
	out := blocks(t, path, after, 1)
	if len(out) == 0 {
		t.Fatalf("%s has no ```sh block after %q", path, after)
	}
	return out
}

// blocks reads up to n (all when n < 0) ```sh blocks of path after the
// first line containing after ("": from the start).
func blocks(t testing.TB, path, after string, n int) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if after != "" {
		i := strings.Index(s, after)
		if i < 0 {
			t.Fatalf("%s has no line with %q", path, after)
		}
		s = s[i:]
	}
	var out []string
	for ; n != 0; n-- {
		start := strings.Index(s, "```sh\n")
		if start < 0 {
			break
		}
		s = s[start+len("```sh\n"):]
		end := strings.Index(s, "```\n")
		if end < 0 {
			t.Fatalf("%s: a ```sh block is not closed", path)
		}
		out = append(out, strings.Split(strings.TrimSuffix(s[:end], "\n"), "\n")...)
		s = s[end:]
	}
	return out
}

// Script is lines to run in bash from Dir with Env added to this process's.
type Script struct {
	Lines []string
	Dir   string
	Env   []string
}

var exitsComment = regexp.MustCompile(`#.*\bexits ([0-9]+)\b`)

var heredocStart = regexp.MustCompile(`<<-?['"]?([A-Za-z_]+)['"]?`)

var marker = regexp.MustCompile(`(?m)^@@doctest line ([0-9]+) exit ([0-9]+)\n`)

// Run runs s in bash, in a process group of its own that is killed when
// it ends (a line may start a daemon in the background), and fails t for
// every line that did not run or exited otherwise than its comment says.
// A heredoc's lines run as one command. It returns what the script wrote.
func Run(t testing.TB, ctx context.Context, s Script) string {
	t.Helper()
	var script strings.Builder
	want := map[int]int{}
	heredoc, from := "", 0
	for i, l := range s.Lines {
		n := i + 1
		script.WriteString(l + "\n")
		if heredoc != "" {
			if strings.TrimSpace(l) == heredoc {
				heredoc = ""
				fmt.Fprintf(&script, "echo \"@@doctest line %d exit $?\"\n", from)
			}
			continue
		}
		if m := heredocStart.FindStringSubmatch(l); m != nil {
			heredoc, from = m[1], n
			want[n] = wantOf(l)
			continue
		}
		want[n] = wantOf(l)
		fmt.Fprintf(&script, "echo \"@@doctest line %d exit $?\"\n", n)
	}
	sh := exec.CommandContext(ctx, "bash", "-c", script.String())
	sh.Dir = s.Dir
	sh.Env = append(os.Environ(), s.Env...)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	err := sh.Wait()
	syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	if err != nil {
		t.Errorf("the lines ended with %v", err)
	}
	got := map[int]int{}
	for _, m := range marker.FindAllStringSubmatch(out.String(), -1) {
		n, _ := strconv.Atoi(m[1])
		got[n], _ = strconv.Atoi(m[2])
	}
	for n := 1; n <= len(s.Lines); n++ {
		w, ok := want[n]
		if !ok {
			continue
		}
		if g, ran := got[n]; !ran {
			t.Errorf("line %d never ran: %s", n, s.Lines[n-1])
		} else if g != w {
			t.Errorf("line %d exited %d, its comment says %d: %s", n, g, w, s.Lines[n-1])
		}
	}
	return marker.ReplaceAllString(out.String(), "")
}

func wantOf(line string) int {
	if m := exitsComment.FindStringSubmatch(line); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// Tool is a folder holding name, a link to this test binary, to put first
// on a document's PATH: its TestMain runs as name when the test asks, so
// the document's lines run the code under test, not an installed build.
func Tool(t testing.TB, name string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
	return dir
}
