package guestimage

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
)

// fakeDeb builds a .deb named like pkg holding one file, in dir.
func fakeDeb(t *testing.T, dir, pkg string) {
	t.Helper()
	dpkgDeb := testenv.RequireCommand(t, "dpkg-deb")
	root := t.TempDir()
	for name, body := range map[string]string{
		"DEBIAN/control":   "Package: " + pkg + "\nVersion: 1.0-1\nArchitecture: all\nMaintainer: test <t@localhost>\nDescription: a stand-in kernel source package\n",
		"usr/src/x.tar.xz": "not a tarball\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(dpkgDeb, "--root-owner-group", "--build", root, filepath.Join(dir, pkg+"_1.0-1_all.deb")).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v: %s", err, out)
	}
}

// withoutApt leaves only dpkg-deb on PATH, so any apt-get would fail.
func withoutApt(t *testing.T) {
	t.Helper()
	dpkgDeb := testenv.RequireCommand(t, "dpkg-deb")
	bin := t.TempDir()
	if err := os.Symlink(dpkgDeb, filepath.Join(bin, "dpkg-deb")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}

func TestASourcePackageFetchedAheadIsUsedWithoutApt(t *testing.T) {
	ahead := filepath.Join(t.TempDir(), "debs")
	fakeDeb(t, ahead, SourcePackage)
	t.Setenv(KernelDebsEnv, ahead)
	withoutApt(t)

	deb, err := fetchDeb(context.Background(), t.TempDir(), SourcePackage)
	if err != nil {
		t.Fatalf("find the package fetched ahead: %v", err)
	}
	if want := filepath.Join(ahead, SourcePackage+"_1.0-1_all.deb"); deb != want {
		t.Fatalf("got %s, want %s", deb, want)
	}
}

func TestWithoutAPackageFetchedAheadTheErrorSaysWhereToPutOne(t *testing.T) {
	ahead := filepath.Join(t.TempDir(), "empty")
	t.Setenv(KernelDebsEnv, ahead)
	withoutApt(t)

	_, err := fetchDeb(context.Background(), t.TempDir(), SourcePackage)
	if err == nil || !strings.Contains(err.Error(), "apt-get download "+SourcePackage) || !strings.Contains(err.Error(), "ahead into "+ahead) {
		t.Fatalf("error: %v", err)
	}
}

func TestAFragmentOptionThatDidNotLandIsNamed(t *testing.T) {
	frag := []byte("# a comment\nCONFIG_A=y\nCONFIG_B=y\nCONFIG_N=64\n# CONFIG_C is not set\n\n")
	if err := fragmentLanded(frag, kernelConfig{"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_N": "64", "CONFIG_D": "y"}); err != nil {
		t.Errorf("every option landed, yet: %v", err)
	}
	err := fragmentLanded(frag, kernelConfig{"CONFIG_A": "y", "CONFIG_N": "8", "CONFIG_C": "y"})
	if err == nil {
		t.Fatal("three options did not land, and no error")
	}
	for _, want := range []string{"3 option(s)", "CONFIG_B=y (the build leaves it unset)", "CONFIG_N=64 (the build has 8)", "CONFIG_C is not set (the build has CONFIG_C=y)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "CONFIG_A") {
		t.Errorf("error names CONFIG_A, which landed: %v", err)
	}
}

func TestTheFragmentInTheRepoParses(t *testing.T) {
	// Every line is an option, a comment or blank: a typo fails here,
	// not minutes into a kernel build.
	full, err := parseKernelConfig("guest.config", guestConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := fragmentLanded(guestConfig, full); err != nil {
		t.Fatalf("the fragment against itself: %v", err)
	}
	if lack := full.memoryReturn(); lack != "" {
		t.Errorf("the fragment lacks what hands memory back: %s", lack)
	}
	if _, ok := full["CONFIG_MODULES"]; ok {
		t.Error("the fragment turns modules on")
	}
}

func TestAHostWithoutTheKernelsBuildToolsIsToldAllOfThemAtOnce(t *testing.T) {
	has := map[string]bool{"make": true, "gcc": true, "bc": true}
	lookPath := func(c string) (string, error) {
		if has[c] {
			return "/usr/bin/" + c, nil
		}
		return "", exec.ErrNotFound
	}
	noFile := func(string) (os.FileInfo, error) { return nil, os.ErrNotExist }
	err := missingKernelTools(lookPath, noFile)
	want := "building the guest kernel needs bison, flex, xz, /usr/include/gelf.h, which this host lacks (apt-get install bison flex xz-utils libelf-dev, or make setup)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	for _, tool := range kernelTools {
		has[tool.cmd] = true
	}
	if err := missingKernelTools(lookPath, func(string) (os.FileInfo, error) { return nil, nil }); err != nil {
		t.Errorf("with everything there: %v", err)
	}
}
