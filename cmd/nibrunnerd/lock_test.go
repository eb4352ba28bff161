package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/control"
)

func TestASecondServeOnTheSameStateDirStopsBeforeItOpensAnything(t *testing.T) {
	root, err := os.MkdirTemp("", "nib-lock-") // short: a socket path fits
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	cfgPath := ctlConfig(t, root)
	unlock, err := lockStateDir(filepath.Join(root, "state"))
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()

	// Cancelled: a serve that is not refused ends at once instead of
	// running a second daemon for the rest of the test.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = serve(ctx, cfgPath, "fake", 0, false)
	if !errors.Is(err, errHeld) {
		t.Fatalf("serve beside a daemon holding the state_dir: %v, want it refused", err)
	}
	for _, want := range []string{"(pid " + strconv.Itoa(os.Getpid()) + ")", filepath.Join(root, "state", lockName), "stop it first"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the refusal %q does not say %q", err, want)
		}
	}
	for _, made := range []string{filepath.Join(root, "run", control.SocketName), filepath.Join(root, "state", "state.db"), filepath.Join(root, "volumes")} {
		if _, err := os.Stat(made); err == nil {
			t.Fatalf("the refused serve made %s", made)
		}
	}
}

func TestServeTakesTheStateDirLockAgainOnceItsHolderLetsGo(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockStateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockStateDir(dir); !errors.Is(err, errHeld) {
		t.Fatalf("a second lock while the first is held: %v", err)
	}
	unlock()
	again, err := lockStateDir(dir)
	if err != nil {
		t.Fatalf("the lock after its holder let go: %v", err)
	}
	again()
}

func TestServeStopsWhenALiveDaemonAnswersOnItsControlSocket(t *testing.T) {
	root, err := os.MkdirTemp("", "nib-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	cfgPath := ctlConfig(t, root)
	sock := filepath.Join(root, "run", control.SocketName)
	other, err := control.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// Cancelled: a serve that is not refused ends at once instead of
	// running a second daemon for the rest of the test.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = serve(ctx, cfgPath, "fake", 0, false)
	if !errors.Is(err, control.ErrInUse) {
		t.Fatalf("serve beside a daemon on its control socket: %v, want it to stop", err)
	}
	if _, err := os.Stat(filepath.Join(root, "state", "state.db")); err == nil {
		t.Fatal("the refused serve opened the state database")
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("the refused serve took the other daemon's socket away: %v", err)
	}
}
