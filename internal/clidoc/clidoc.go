// Package clidoc renders a cobra command tree as one Markdown reference
// page: every command that a user can run, its usage, description and
// flags. Both products generate docs/cli/<name>.md with it, and a test in
// each command's package fails when the page is stale, so the reference is
// the code's own help text and nothing else.
package clidoc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Render is the reference page of root and every command under it.
func Render(root *cobra.Command) []byte {
	root.InitDefaultHelpCmd()
	var b bytes.Buffer
	name := root.Name()
	fmt.Fprintf(&b, "# `%s` command reference\n\n", name)
	fmt.Fprintf(&b, "<!-- Generated from the cobra commands of cmd/%s by `go generate ./cmd/%s`; do not edit. -->\n\n", name, name)
	fmt.Fprintf(&b, "%s\n\n", strings.TrimSpace(description(root)))
	cmds := commands(root)
	for _, c := range cmds[1:] {
		fmt.Fprintf(&b, "- [`%s`](#%s) — %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	b.WriteString("\n")
	for _, c := range cmds {
		section(&b, c)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// commands is root and every runnable command under it, depth first in
// name order (help and completion left out: cobra's, not ours).
func commands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	subs := root.Commands()
	sort.Slice(subs, func(i, j int) bool { return subs[i].Name() < subs[j].Name() })
	for _, c := range subs {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || !c.IsAvailableCommand() {
			continue
		}
		out = append(out, commands(c)...)
	}
	return out
}

func description(c *cobra.Command) string {
	if c.Long != "" {
		return c.Long
	}
	return c.Short
}

func anchor(path string) string { return strings.ReplaceAll(path, " ", "-") }

func section(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", c.CommandPath())
	if c.Runnable() {
		fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	}
	fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(description(c)))
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Aliases: %s\n\n", strings.Join(c.Aliases, ", "))
	}
	flags(b, "Flags", c.NonInheritedFlags())
	flags(b, "Global flags", c.InheritedFlags())
}

func flags(b *bytes.Buffer, title string, fs *pflag.FlagSet) {
	var rows []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := ""
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			def = "`" + f.DefValue + "`"
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s |", name, def, strings.ReplaceAll(f.Usage, "|", `\|`)))
	})
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:\n\n| flag | default | |\n| --- | --- | --- |\n%s\n\n", title, strings.Join(rows, "\n"))
}

// Check compares the reference of root with the file at path (relative
// to the test's package), rewriting it instead when update is set.
func Check(t *testing.T, root *cobra.Command, path string, update bool) {
	t.Helper()
	got := append(Render(root), '\n')
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; write it with go generate", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: the commands' help changed; rewrite it with go generate ./cmd/%s\n%s", path, root.Name(), firstDifference(want, got))
	}
}

// firstDifference names the first line where the page on disk (want) and
// the one the commands give (got) part.
func firstDifference(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d is\n\t%q\nand the commands give\n\t%q", i+1, a, b)
		}
	}
	return ""
}
