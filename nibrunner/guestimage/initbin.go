package guestimage

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// EnvInit names a nibrun-init binary to use instead of looking for one.
const EnvInit = "NIBRUN_INIT"

// findInit returns a static nibrun-init binary. In order: the path given,
// $NIBRUN_INIT, a nibrun-init next to the running executable (an installed
// nibrunnerd ships one beside it), and finally one built from this source
// tree with CGO_ENABLED=0 (make, go test) into buildDir.
func findInit(ctx context.Context, given, buildDir string) (string, error) {
	if given != "" {
		return given, checkStatic(given)
	}
	if p := os.Getenv(EnvInit); p != "" {
		return p, checkStatic(p)
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "nibrun-init")
		if _, err := os.Stat(p); err == nil && checkStatic(p) == nil {
			return p, nil
		}
	}
	src, err := moduleRoot()
	if err != nil {
		return "", fmt.Errorf("no nibrun-init: none was given, $%s is unset, none is beside %s, and %w", EnvInit, os.Args[0], err)
	}
	if err := os.MkdirAll(buildDir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(buildDir, "nibrun-init")
	// Every byte of the init stays in each guest's RAM (it lives in the
	// initramfs): no symbol table or DWARF, as make build leaves them out.
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./cmd/nibrun-init")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build nibrun-init from %s: %w: %s", src, err, lastLines(b))
	}
	return out, checkStatic(out)
}

// moduleRoot walks up from the working directory to this repository's
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "module alpnib.dev") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the working directory is not inside the alpnib.dev source tree to build one from")
		}
		dir = parent
	}
}

// checkStatic refuses a binary that needs a dynamic loader: the initramfs
// has no libc.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("nibrun-init %s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("nibrun-init %s is dynamically linked; build it with CGO_ENABLED=0", p)
		}
	}
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("nibrun-init %s is built for %s, not x86-64", p, f.Machine)
	}
	return nil
}
