// Package daemontest sets up what a test that runs the real daemon needs
// beside its VMM: the layer cache, volumes, checkpoints and exports, all
// in one folder, on an object store that is a folder too; a tenant built
// from this module; a slot pinned before the daemon opens; a long wait.
package daemontest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/volume"
)

// FolderDeps are daemon.Deps with Layers, Volumes, Checkpoints and
// Exports filled: layers cached in dir/cache, volumes as files in
// dir/volumes, checkpoints and exports recorded under dir, every object
// read from and written to the folder store at storeDir.
func FolderDeps(ctx context.Context, dir, storeDir string) (daemon.Deps, error) {
	st, err := store.NewDir(storeDir)
	if err != nil {
		return daemon.Deps{}, err
	}
	cache, err := layer.NewCache(filepath.Join(dir, "cache"), st)
	if err != nil {
		return daemon.Deps{}, err
	}
	vols, err := volume.NewLocal(filepath.Join(dir, "volumes"), st)
	if err != nil {
		return daemon.Deps{}, err
	}
	cps, err := checkpoint.Open(ctx, checkpoint.Options{Dir: filepath.Join(dir, "checkpoints"), Objects: st, Prefix: "checkpoints/"})
	if err != nil {
		return daemon.Deps{}, err
	}
	exps, err := export.Open(ctx, export.Options{Objects: st, StagingDir: filepath.Join(dir, "export-staging"), RecordDir: filepath.Join(dir, "exports")})
	if err != nil {
		return daemon.Deps{}, err
	}
	return daemon.Deps{Layers: cache, Volumes: vols, Checkpoints: cps, Exports: exps}, nil
}

// Tenant builds the Go program pkg (an import path) as a static binary at
// path, the way a tenant's executable layer is built, and returns its
// sha256 in hex.
func Tenant(pkg, path string) (string, error) {
	build := exec.Command("go", "build", "-trimpath", "-o", path, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// PinSlot gives app slot n in the database under stateDir before a
// daemon opens it, so that a test knows the app's host ports and tap.
func PinSlot(ctx context.Context, stateDir, app string, n int) error {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	slots, err := db.Open(ctx, filepath.Join(stateDir, "state.db"))
	if err != nil {
		return err
	}
	defer slots.Close()
	return slots.PutSlots(ctx, map[string]int{app: n})
}

// WaitLong polls cond for up to 5 minutes (a boot under software
// emulation on a busy machine) and fails t with the report at report when
// it never holds.
func WaitLong(t testing.TB, what string, cond func() bool, report string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(report)
			t.Fatalf("timed out waiting until %s; reported.json:\n%s", what, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// GuestImage builds (or finds, already built) the guest image in the
// folder every QEMU test shares, so the kernel is fetched once per
// machine.
func GuestImage(t testing.TB) guestimage.Image {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	img, err := guestimage.Build(ctx, testenv.GuestImageDir())
	if err != nil {
		t.Fatalf("build the guest image: %v", err)
	}
	return img
}

// RunDir is a folder for one test's daemon with a path short enough for
// QEMU's unix sockets; when the test ends, the guests whose pidfiles are
// in its run/ are killed and the folder is removed.
func RunDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Cleanup(func() { fake.KillAll(filepath.Join(dir, "run")) })
	return dir
}
