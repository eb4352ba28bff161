package qemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

func TestARestartedVMMKillsTheQEMUOfALaunchThatDiedBeforeItsPidfile(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "qemu-system-x86_64")
	d := shortTempDir(t)
	run := filepath.Join(d, "run")
	if err := os.MkdirAll(filepath.Join(run, "orphan"), 0o750); err != nil {
		t.Fatal(err)
	}
	// What a daemon killed between the launch and the pidfile leaves: the
	// marker, and a process whose command line names the app's QMP socket.
	if err := os.WriteFile(filepath.Join(run, "orphan", launchingFile), nil, 0o640); err != nil {
		t.Fatal(err)
	}
	orphan := exec.Command("sh", "-c", "sleep 600; :", qmpArgOf(filepath.Join(run, "orphan", vmDirName)))
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-orphan.Process.Pid, syscall.SIGKILL) })
	exited := make(chan error, 1)
	go func() { exited <- orphan.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := New(ctx, Config{RuntimeDir: run, SnapshotDir: filepath.Join(d, "snap")})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan of the launch still runs after a VMM started on its runtime folder")
	}
	if _, err := os.Stat(filepath.Join(run, "orphan", launchingFile)); err == nil {
		t.Error("the launching marker outlived the orphan's kill")
	}
}
