package clidoc

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func tool() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "Do things", Long: "tool does things."}
	root.PersistentFlags().String("config", "tool.hcl", "the configuration")
	run := &cobra.Command{Use: "run NAME", Short: "Run one thing", Run: func(*cobra.Command, []string) {}}
	run.Flags().BoolP("follow", "f", false, "keep going | forever")
	root.AddCommand(run, &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}})
	return root
}

func TestTheReferenceHasEveryCommandItsUsageAndItsFlags(t *testing.T) {
	got := string(Render(tool()))
	for _, want := range []string{
		"# `tool` command reference",
		"- [`tool run`](#tool-run) — Run one thing",
		"## tool run\n\n```\ntool run NAME [flags]\n```\n\nRun one thing",
		"| `-f`, `--follow` |  | keep going \\| forever |",
		"Global flags:\n\n| flag | default | |\n| --- | --- | --- |\n| `--config` | `tool.hcl` | the configuration |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the reference lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"secret", "completion", "## tool help"} {
		if strings.Contains(got, absent) {
			t.Errorf("the reference shows %q", absent)
		}
	}
}

func TestTheReferenceIsTheSameEachTime(t *testing.T) {
	if a, b := Render(tool()), Render(tool()); string(a) != string(b) {
		t.Fatal("two renderings differ")
	}
}

func TestAStalePageIsNamedByItsFirstDifferentLine(t *testing.T) {
	got := firstDifference([]byte("a\nb\nc"), []byte("a\nB\nc"))
	if got != "line 2 is\n\t\"b\"\nand the commands give\n\t\"B\"" {
		t.Fatalf("%q", got)
	}
}
