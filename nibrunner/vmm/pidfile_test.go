package vmm

import (
	"os"
	"path/filepath"
	"testing"
)

func TestAPidfileOfThisProcessIsAliveAndAReusedPidIsNot(t *testing.T) {
	boot, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	ticks, err := StartTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := Pidfile{AppID: "a", PID: os.Getpid(), BootID: boot, StartTicks: ticks}
	if err := WritePidfile(filepath.Join(dir, "a.pid"), p); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPidfiles(dir)
	if err != nil || len(got) != 1 {
		t.Fatalf("ReadPidfiles = %v, %v", got, err)
	}
	if !got[0].Alive(boot) {
		t.Fatal("this process's pidfile is not alive")
	}
	reused := got[0]
	reused.StartTicks++
	if reused.Alive(boot) {
		t.Fatal("a pidfile whose start time differs counts as alive")
	}
	if got[0].Alive("another-boot") {
		t.Fatal("a pidfile from another boot counts as alive")
	}
}
