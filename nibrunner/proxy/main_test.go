package proxy

import (
	"os"
	"testing"

	"alpnib.dev/nibrunner/jail"
)

// TestMain lets this test binary be the jail's launcher: the guests its
// tests boot are started by running it again, as nibrunnerd's main does.
func TestMain(m *testing.M) {
	if jail.IsLauncher(os.Args) {
		os.Exit(jail.RunLauncher(os.Args))
	}
	os.Exit(m.Run())
}
