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

// fakeKernelDeb builds a .deb named like pkg holding one file, in dir.
func fakeKernelDeb(t *testing.T, dir, pkg string) {
	t.Helper()
	dpkgDeb := testenv.RequireCommand(t, "dpkg-deb")
	root := t.TempDir()
	for name, body := range map[string]string{
		"DEBIAN/control":    "Package: " + pkg + "\nVersion: 1.0-1\nArchitecture: amd64\nMaintainer: test <t@localhost>\nDescription: a stand-in kernel package\n",
		"boot/vmlinuz-test": "not a kernel\n",
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
	if out, err := exec.Command(dpkgDeb, "--root-owner-group", "--build", root, filepath.Join(dir, pkg+"_1.0-1_amd64.deb")).CombinedOutput(); err != nil {
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
	// dpkg-deb runs tar and a decompressor.
	for _, tool := range []string{"tar", "xz", "zstd", "gzip"} {
		if p, err := exec.LookPath(tool); err == nil {
			_ = os.Symlink(p, filepath.Join(bin, tool))
		}
	}
	t.Setenv("PATH", bin)
}

func TestAKernelPackageFetchedAheadIsUnpackedWithoutApt(t *testing.T) {
	const pkg = "linux-image-6.1.0-99-cloud-amd64"
	ahead := filepath.Join(t.TempDir(), "debs")
	fakeKernelDeb(t, ahead, pkg)
	t.Setenv(KernelDebsEnv, ahead)
	withoutApt(t)

	tree, err := fetchKernel(context.Background(), t.TempDir(), pkg)
	if err != nil {
		t.Fatalf("fetch the kernel fetched ahead: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "boot", "vmlinuz-test")); err != nil || string(b) != "not a kernel\n" {
		t.Fatalf("the unpacked tree lacks the package's file: %q %v", b, err)
	}
}

func TestWithoutAPackageFetchedAheadTheErrorSaysWhereToPutOne(t *testing.T) {
	const pkg = "linux-image-6.1.0-99-cloud-amd64"
	ahead := filepath.Join(t.TempDir(), "empty")
	t.Setenv(KernelDebsEnv, ahead)
	withoutApt(t)

	_, err := fetchKernel(context.Background(), t.TempDir(), pkg)
	if err == nil || !strings.Contains(err.Error(), "apt-get download "+pkg) || !strings.Contains(err.Error(), "fetch "+pkg+"_*.deb ahead into "+ahead) {
		t.Fatalf("error: %v", err)
	}
}
