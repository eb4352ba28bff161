// Package testenv lets a test say what it needs from the machine. On a
// developer's machine a test whose need is missing skips, saying what is
// missing; with NIB_INTEGRATION=1 (set by .ci/run) it fails instead, so CI
// never counts a skipped integration test as a pass.
package testenv

import (
	"os"
	"os/exec"
	"testing"
)

// Integration reports whether the integration lane is on (NIB_INTEGRATION=1).
func Integration() bool { return os.Getenv("NIB_INTEGRATION") == "1" }

// Missing skips t, or fails it in the integration lane, saying what is missing.
func Missing(t testing.TB, what string) {
	t.Helper()
	if Integration() {
		t.Fatalf("NIB_INTEGRATION=1 but this test cannot run: %s", what)
	}
	t.Skipf("skipped: %s (set NIB_INTEGRATION=1 to make this a failure)", what)
}

// RequireRoot needs the test to run as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "needs root")
	}
}

// RequireCommand needs each named program on PATH (or in /usr/sbin, /sbin)
// and returns the path of the first.
func RequireCommand(t testing.TB, names ...string) string {
	t.Helper()
	first := ""
	for i, name := range names {
		p, err := lookPath(name)
		if err != nil {
			Missing(t, "needs the program "+name+" (make setup installs it)")
			return ""
		}
		if i == 0 {
			first = p
		}
	}
	return first
}

func lookPath(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return exec.LookPath(name)
}
