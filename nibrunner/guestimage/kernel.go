package guestimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KernelDebsEnv names a folder holding packages downloaded ahead of time
// (the kernel source); unset, it is DefaultKernelDebs. make setup
// (scripts/prefetch.sh) fills it, so that a build run where nothing may be
// downloaded (the tests, under the network guard) finds the .deb there
// instead of running apt-get.
const KernelDebsEnv = "NIBRUNNER_KERNEL_DEBS"

// DefaultKernelDebs is where make setup puts the kernel source package.
const DefaultKernelDebs = "/var/cache/nibrunner/debs"

// KernelDebs is the folder of packages downloaded ahead of time.
func KernelDebs() string { return envOr(KernelDebsEnv, DefaultKernelDebs) }

// envOr is the environment variable name's value, or def when it is unset
// or empty.
func envOr(name, def string) string {
	if d := os.Getenv(name); d != "" {
		return d
	}
	return def
}

// fetchDeb returns the .deb of pkg's candidate version (what apt-cache
// says apt-get download fetches today, so that an update of the package
// is picked up): one an earlier call downloaded into debDir, else one
// fetched ahead of time into KernelDebs, else apt-get download fetches it
// into debDir. When apt knows no candidate (no package lists), any .deb of
// pkg found there will do. Nothing is installed on the host.
func fetchDeb(ctx context.Context, debDir, pkg string) (string, error) {
	pattern := pkg + "_*.deb"
	if v := candidateVersion(ctx, pkg); v != "" {
		// Debian's file names write an epoch's colon as %3a.
		pattern = pkg + "_" + strings.ReplaceAll(v, ":", "%3a") + "_*.deb"
	}
	if debs := findDebs(pattern, debDir, KernelDebs()); len(debs) > 0 {
		return debs[len(debs)-1], nil
	}
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", pkg)
	cmd.Dir = debDir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %w: %s (to build without downloading, fetch %s ahead into %s, the folder $%s names, default %s: make setup does)",
			pkg, err, lastLines(out), pattern, KernelDebs(), KernelDebsEnv, DefaultKernelDebs)
	}
	debs := findDebs(pattern, debDir)
	if len(debs) == 0 {
		return "", fmt.Errorf("apt-get download %s left no %s in %s", pkg, pattern, debDir)
	}
	return debs[len(debs)-1], nil
}

// candidateVersion is the version apt would fetch of pkg, or "" when apt
// cannot say.
func candidateVersion(ctx context.Context, pkg string) string {
	out, err := exec.CommandContext(ctx, "apt-cache", "show", "--no-all-versions", pkg).Output()
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Version: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// findDebs lists the .deb files matching pattern in the first of dirs that
// holds any.
func findDebs(pattern string, dirs ...string) []string {
	for _, d := range dirs {
		if debs, _ := filepath.Glob(filepath.Join(d, pattern)); len(debs) > 0 {
			return debs
		}
	}
	return nil
}
func cmdErr(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, lastLines(ee.Stderr))
	}
	return err
}

// lastLines keeps the end of a tool's output for an error message.
func lastLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}
