package qemu

import (
	"context"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/vmm"
)

// unansweringGuest stands a process in for a QEMU whose guest never
// answers the shutdown request (nobody listens on its control socket).
func unansweringGuest(t *testing.T, v *VMM, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the whole session: the shell's sleep children too.
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	ticks, err := vmm.StartTicks(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	g := &vmGuest{
		pf:   vmm.Pidfile{AppID: "app", PID: cmd.Process.Pid, BootID: v.bootID, StartTicks: ticks},
		done: make(chan struct{}),
		ctl:  newControl(filepath.Join(t.TempDir(), controlSocket), func(guest.Message) {}),
	}
	v.guests["app"] = g
	go func() { _ = cmd.Wait(); close(g.done) }()
	// Let the shell set its trap before it is signalled.
	time.Sleep(200 * time.Millisecond)
	return cmd
}

func stopVMM(t *testing.T) *VMM {
	t.Helper()
	boot, err := vmm.BootID()
	if err != nil {
		t.Skipf("no boot id on this system: %v", err)
	}
	return &VMM{cfg: Config{RuntimeDir: t.TempDir()}, bootID: boot, guests: map[string]*vmGuest{}}
}

func TestAGuestThatDoesNotShutDownIsSentSIGTERMAndStops(t *testing.T) {
	v := stopVMM(t)
	cmd := unansweringGuest(t, v, "while :; do sleep 0.1; done")
	if err := v.Stop(context.Background(), "app"); err != nil {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("the process ended %v, want by SIGTERM", cmd.ProcessState)
	}
	if _, ok := v.guests["app"]; ok {
		t.Error("a stopped guest is still held")
	}
}

func TestAGuestThatIgnoresSIGTERMIsKilled(t *testing.T) {
	v := stopVMM(t)
	cmd := unansweringGuest(t, v, "trap '' TERM; while :; do sleep 0.1; done")
	start := time.Now()
	if err := v.Stop(context.Background(), "app"); err != nil {
		t.Fatal(err)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the process ended %v, want by SIGKILL", cmd.ProcessState)
	}
	// The shutdown request (2 s) and SIGTERM (3 s) were each given their
	// time first.
	if d := time.Since(start); d < 4*time.Second {
		t.Errorf("SIGKILL came after %v, before the gentler steps had their time", d)
	}
}
