// Command nibrunnerd turns one Linux machine into a host for many microVMs:
// it watches desired.json and converges the host on it, reporting what it
// did in reported.json.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"alpnib.dev/internal/version"
	"alpnib.dev/nibrunner/jail"
)

func main() {
	// The daemon starts each jailed program by running this binary again
	// as its launcher (nibrunner/jail), before anything else.
	if jail.IsLauncher(os.Args) {
		os.Exit(jail.RunLauncher(os.Args))
	}
	os.Exit(run(os.Args[1:]))
}

// run executes nibrunnerd with args and returns the process exit code.
func run(args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		// An exec's program's exit status is the command's, unsaid.
		var code exitCode
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(os.Stderr, "nibrunnerd:", err)
		return 1
	}
	return 0
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "nibrunnerd",
		Short: "Run hundreds of microVMs on one Linux host, converging on desired.json",
		Long: `nibrunnerd watches desired.json and converges this host on it: it fetches
layers, formats volumes, boots microVMs, routes hostnames to them, puts idle
apps to sleep and wakes them on the next request, and reports everything in
reported.json.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	version.Attach(root)
	root.AddCommand(newCheckCmd(), newConfigCmd())
	root.AddCommand(newInstallCmd())
	root.AddCommand(newServeCmd())
	root.AddCommand(newSleepCmd())
	root.AddCommand(newWakeCmd())
	root.AddCommand(newPSCmd(), newStatusCmd(), newLogsCmd(), newEventsCmd())
	root.AddCommand(newExecCmd(), newCpCmd())
	root.AddCommand(newImageCmd(), newAppCmd())
	return root
}
