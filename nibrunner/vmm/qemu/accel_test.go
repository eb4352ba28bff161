package qemu

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/guestimage"
)

// fakeQEMU writes a script standing in for qemu-system-x86_64 in a probe
// boot: it finds the -serial file and either writes the init's probe line
// to it (a guest that runs) or hangs (a guest that never progresses).
func fakeQEMU(t *testing.T, works bool) string {
	t.Helper()
	body := "exec sleep 60\n"
	if works {
		body = `echo "[    0.4] booting" > "$serial"; echo "nibrun-init: probe ok" >> "$serial"` + "\n"
	}
	p := filepath.Join(t.TempDir(), "qemu")
	script := "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -serial ]; then serial=${2#file:}; fi; shift; done\n" + body
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTheAcceleratorIsKVMOnlyWhenAProbeGuestReallyBootsAndTheVerdictIsCached(t *testing.T) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no usable /dev/kvm: the verdict is TCG without a probe")
	}
	f.Close()
	probeTimeout = 2 * time.Second
	defer func() { probeTimeout = 8 * time.Second }()
	ctx := context.Background()
	dir := t.TempDir()
	img := guestimage.Image{Version: "gi-test", Kernel: "/k", Initrd: "/i"}

	start := time.Now()
	if a := chooseAccel(ctx, fakeQEMU(t, false), img, "boot-1", dir, filepath.Join(dir, "accel.json")); a != "tcg" {
		t.Fatalf("a guest that never boots gave %s", a)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the probe of a stuck guest took %v, longer than its timeout", d)
	}
	// Same boot, same image: the verdict is remembered, even with a QEMU
	// that would now boot.
	if a := chooseAccel(ctx, fakeQEMU(t, true), img, "boot-1", dir, filepath.Join(dir, "accel.json")); a != "tcg" {
		t.Fatalf("the cached verdict was not used: %s", a)
	}
	// Another host boot probes again.
	if a := chooseAccel(ctx, fakeQEMU(t, true), img, "boot-2", dir, filepath.Join(dir, "accel.json")); a != "kvm" {
		t.Fatalf("a guest that boots gave %s", a)
	}
	// A new process (empty memory cache) reads the verdict from the file.
	probeMu.Lock()
	delete(probeCache, "boot-2 gi-test")
	probeMu.Unlock()
	if a := chooseAccel(ctx, fakeQEMU(t, false), img, "boot-2", dir, filepath.Join(dir, "accel.json")); a != "kvm" {
		t.Fatalf("the verdict file was not read: %s", a)
	}
}

func TestTheKVMProbeSurvivesACancelledFirstStart(t *testing.T) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		t.Skip("no usable /dev/kvm: the verdict is TCG without a probe")
	}
	f.Close()
	dir := t.TempDir()
	img := guestimage.Image{Version: "gi-cancel", Kernel: "/k", Initrd: "/i"}
	// The first start's context is already over (a daemon closing): the
	// probe still runs to its verdict, which the whole host boot keeps.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if a := chooseAccel(ctx, fakeQEMU(t, true), img, "boot-cancel", dir, filepath.Join(dir, "accel.json")); a != "kvm" {
		t.Fatalf("a cancelled first start made the host %s for its whole boot", a)
	}
}
