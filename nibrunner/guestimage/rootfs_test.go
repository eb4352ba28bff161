package guestimage

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"alpnib.dev/internal/testenv"
)

// nibrunnerd serves under umask 027; the base root it builds must still
// let the tenant (uid 65534) through every folder and read every file.
func TestTheBaseRootIsReadableByTheTenantWhateverTheUmask(t *testing.T) {
	testenv.RequireCommand(t, "mksquashfs", "unsquashfs")
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	out := filepath.Join(t.TempDir(), "base.squashfs")
	if err := buildBase(context.Background(), out, []byte("a CA bundle\n")); err != nil {
		t.Fatal(err)
	}
	b, err := exec.Command("unsquashfs", "-lls", out).CombinedOutput()
	if err != nil {
		t.Fatalf("unsquashfs: %v\n%s", err, b)
	}
	want := map[string]string{
		"squashfs-root/etc":                               "drwxr-xr-x",
		"squashfs-root/etc/ssl":                           "drwxr-xr-x",
		"squashfs-root/etc/ssl/certs":                     "drwxr-xr-x",
		"squashfs-root/etc/resolv.conf":                   "-rw-r--r--",
		"squashfs-root/etc/ssl/certs/ca-certificates.crt": "-rw-r--r--",
		"squashfs-root/tmp":                               "drwxrwxrwt",
		"squashfs-root/root":                              "drwx------",
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		if mode, ok := want[f[len(f)-1]]; ok {
			if f[0] != mode {
				t.Errorf("%s is %s, want %s", f[len(f)-1], f[0], mode)
			}
			delete(want, f[len(f)-1])
		}
	}
	for name := range want {
		t.Errorf("the base root lacks %s:\n%s", name, b)
	}
}
