package guestimage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"alpnib.dev/nibrunner/perm"
)

// CACertificates is the host's CA bundle, copied into the base root so a
// tenant can speak TLS without shipping its own.
const CACertificates = "/etc/ssl/certs/ca-certificates.crt"

// baseFiles is the base root filesystem apart from the CA bundle: the
// accounts a tenant runs as and the mount points the init fills.
var baseFiles = map[string]string{
	"etc/passwd":        "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
	"etc/group":         "root:x:0:\nnogroup:x:65534:\n",
	"etc/hosts":         "127.0.0.1\tlocalhost\n::1\tlocalhost\n",
	"etc/nsswitch.conf": "hosts: files dns\n",
	"etc/resolv.conf":   "",
}

var baseDirs = []struct {
	name string
	perm os.FileMode
}{
	{"dev", 0o755}, {"proc", 0o555}, {"sys", 0o555}, {"run", 0o755},
	{"tmp", 0o777 | os.ModeSticky}, {"root", 0o700}, {"etc/ssl/certs", 0o755},
}

// buildBase makes the base root squashfs at out: the bottom of every
// guest's stack. mksquashfs runs with fixed times and root ownership so the
// same inputs give the same bytes.
func buildBase(ctx context.Context, out string, caBundle []byte) error {
	stage, err := os.MkdirTemp(filepath.Dir(out), ".base-stage-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	for _, d := range baseDirs {
		// Every folder above it is 0755 whatever the umask (nibrunnerd's
		// is 027): a tenant that cannot pass through /etc cannot read
		// /etc/resolv.conf, and its lookups fall back to [::1]:53.
		p := filepath.Join(stage, d.name)
		if err := perm.MkdirExact(stage, filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Mkdir(p, d.perm); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		if err := os.Chmod(p, d.perm); err != nil {
			return err
		}
	}
	files := map[string][]byte{"etc/ssl/certs/ca-certificates.crt": caBundle}
	for n, s := range baseFiles {
		files[n] = []byte(s)
	}
	for n, b := range files {
		// WriteFile's mode passes through the umask (nibrunnerd's is
		// 027): the guest's files must be readable by its tenant.
		if err := os.WriteFile(filepath.Join(stage, n), b, 0o644); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(stage, n), 0o644); err != nil {
			return err
		}
	}
	tmp := out + ".tmp"
	_ = os.Remove(tmp)
	cmd := exec.CommandContext(ctx, "mksquashfs", stage, tmp,
		"-noappend", "-quiet", "-no-progress", "-comp", "gzip",
		"-all-root", "-mkfs-time", "0", "-all-time", "0", "-processors", "1")
	// mksquashfs refuses SOURCE_DATE_EPOCH beside -all-time; the flags win.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SOURCE_DATE_EPOCH=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("mksquashfs the base root: %w: %s", err, lastLines(b))
	}
	return os.Rename(tmp, out)
}
