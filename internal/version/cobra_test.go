package version

import (
	"bytes"
	"testing"

	"github.com/spf13/cobra"
)

func run(t *testing.T, args ...string) string {
	t.Helper()
	root := &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(&cobra.Command{Use: "other", Run: func(*cobra.Command, []string) {}})
	Attach(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("tool %v: %v", args, err)
	}
	return out.String()
}

func TestTheVersionFlagPrintsWhatTheVersionCommandPrints(t *testing.T) {
	cmd, flag := run(t, "version"), run(t, "--version")
	if cmd != String()+"\n" || flag != cmd {
		t.Fatalf("version printed %q, --version %q; want both the bare %q on a line", cmd, flag, String())
	}
}

func TestTheRootWithoutTheFlagStillShowsItsHelp(t *testing.T) {
	if out := run(t); !bytes.Contains([]byte(out), []byte("other")) {
		t.Fatalf("tool printed %q, not its help", out)
	}
}
