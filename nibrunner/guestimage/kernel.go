package guestimage

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"alpnib.dev/internal/atomicfile"
)

// KernelMetapackage is the Debian package whose dependency names the
// current cloud kernel.
const KernelMetapackage = "linux-image-cloud-amd64"

var kernelPackageRE = regexp.MustCompile(`^linux-image-([0-9][^ ]*-cloud-amd64)(-unsigned)?$`)

// resolveKernelPackage asks apt which versioned package the metapackage
// depends on today, e.g. linux-image-6.1.0-57-cloud-amd64, and returns it
// with its kernel release (6.1.0-57-cloud-amd64).
func resolveKernelPackage(ctx context.Context) (pkg, release string, err error) {
	out, err := exec.CommandContext(ctx, "apt-cache", "depends", KernelMetapackage).Output()
	if err != nil {
		return "", "", fmt.Errorf("ask apt what %s depends on: %w", KernelMetapackage, cmdErr(err))
	}
	for _, l := range strings.Split(string(out), "\n") {
		l = strings.TrimSpace(l)
		name, ok := strings.CutPrefix(l, "Depends: ")
		if !ok {
			continue
		}
		if m := kernelPackageRE.FindStringSubmatch(strings.Trim(name, "<>")); m != nil {
			return m[0], m[1], nil
		}
	}
	return "", "", fmt.Errorf("%s depends on no versioned kernel package (apt-cache depends said %q)", KernelMetapackage, strings.TrimSpace(string(out)))
}

// KernelDebsEnv names a folder holding kernel packages downloaded ahead of
// time; unset, it is DefaultKernelDebs. make setup (scripts/setup.sh) fills
// it, so that a build run where nothing may be downloaded (the tests, under
// the network guard) finds the .deb there instead of running apt-get.
const KernelDebsEnv = "NIBRUNNER_KERNEL_DEBS"

// DefaultKernelDebs is where make setup puts the kernel package.
const DefaultKernelDebs = "/var/cache/nibrunner/debs"

// KernelDebs is the folder of kernel packages downloaded ahead of time.
func KernelDebs() string {
	if d := os.Getenv(KernelDebsEnv); d != "" {
		return d
	}
	return DefaultKernelDebs
}

// fetchKernel unpacks pkg under cacheDir unless an earlier call already
// did, and returns the unpacked tree. The .deb is one an earlier call
// downloaded into cacheDir/debs, else one fetched ahead of time into
// KernelDebs, else apt-get download fetches it into cacheDir/debs. Nothing
// is installed on the host: dpkg-deb -x unpacks it into a folder of ours.
func fetchKernel(ctx context.Context, cacheDir, pkg string) (string, error) {
	tree := filepath.Join(cacheDir, pkg)
	done := filepath.Join(tree, ".unpacked")
	if _, err := os.Stat(done); err == nil {
		return tree, nil
	}
	debDir := filepath.Join(cacheDir, "debs")
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return "", err
	}
	debs := findDebs(pkg, debDir, KernelDebs())
	if len(debs) == 0 {
		cmd := exec.CommandContext(ctx, "apt-get", "download", "-q", pkg)
		cmd.Dir = debDir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get download %s: %w: %s (to build without downloading, fetch %s_*.deb ahead into %s, the folder $%s names, default %s: make setup does)",
				pkg, err, lastLines(out), pkg, KernelDebs(), KernelDebsEnv, DefaultKernelDebs)
		}
		if debs = findDebs(pkg, debDir); len(debs) == 0 {
			return "", fmt.Errorf("apt-get download %s left no .deb in %s", pkg, debDir)
		}
	}
	tmp := tree + ".tmp"
	_ = os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", debs[len(debs)-1], tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %w: %s", debs[len(debs)-1], err, lastLines(out))
	}
	_ = os.RemoveAll(tree)
	if err := os.Rename(tmp, tree); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(done, []byte(filepath.Base(debs[len(debs)-1])+"\n"), 0o644); err != nil {
		return "", err
	}
	return tree, nil
}

// findDebs lists pkg's .deb files in the first of dirs that holds any.
func findDebs(pkg string, dirs ...string) []string {
	for _, d := range dirs {
		if debs, _ := filepath.Glob(filepath.Join(d, pkg+"_*.deb")); len(debs) > 0 {
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
