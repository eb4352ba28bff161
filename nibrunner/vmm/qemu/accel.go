package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/guestimage"
)

// probeTimeout bounds a KVM probe boot; a KVM guest reaches its init in
// well under a second, a stuck one never does.
var probeTimeout = 8 * time.Second

var (
	probeMu    sync.Mutex
	probeCache = map[string]string{} // boot id + kernel -> accel
)

// chooseAccel returns "kvm" when a guest really boots under KVM and "tcg"
// otherwise. Opening /dev/kvm is not enough: on nested build machines it
// opens and even creates a VM that never runs, so the probe boots the guest
// kernel with nibrun.probe and waits for the init's word on the console.
// The verdict is cached per host boot, in memory and in cacheFile.
func chooseAccel(ctx context.Context, qemuBin string, img guestimage.Image, bootID, dir, cacheFile string) string {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return "tcg"
	}
	f.Close()
	key := bootID + " " + img.Version
	probeMu.Lock()
	defer probeMu.Unlock()
	if a, ok := probeCache[key]; ok {
		return a
	}
	var cached struct{ Key, Accel string }
	if b, err := os.ReadFile(cacheFile); err == nil && json.Unmarshal(b, &cached) == nil && cached.Key == key {
		probeCache[key] = cached.Accel
		return cached.Accel
	}
	accel := "tcg"
	if probeKVM(ctx, qemuBin, img, dir) {
		accel = "kvm"
	}
	probeCache[key] = accel
	b, _ := json.Marshal(struct{ Key, Accel string }{key, accel})
	_ = atomicfile.WriteFile(cacheFile, b, 0o640)
	return accel
}

// probeKVM boots a probe guest under KVM. It runs on its own context
// (bounded by probeTimeout), not the caller's: the verdict is cached for the
// whole host boot, so a first start that was cancelled (a daemon closing,
// a start's deadline) must not make every later guest run under TCG.
func probeKVM(ctx context.Context, qemuBin string, img guestimage.Image, dir string) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeTimeout)
	defer cancel()
	tmp, err := os.MkdirTemp(dir, "kvm-probe-")
	if err != nil {
		return false
	}
	defer os.RemoveAll(tmp)
	console := filepath.Join(tmp, "console")
	cmd := exec.CommandContext(ctx, qemuBin, "-M", microvmMachine, "-accel", "kvm", "-m", "128", "-smp", "1",
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot",
		"-serial", "file:"+console, "-kernel", img.Kernel, "-initrd", img.Initrd,
		"-append", "console=ttyS0 reboot=t panic=-1 quiet "+guest.ParamProbe+"=1")
	if err := cmd.Start(); err != nil {
		return false
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	for {
		b, _ := os.ReadFile(console)
		if bytes.Contains(b, []byte(guest.ProbeOK)) {
			_ = cmd.Process.Kill()
			<-done
			return true
		}
		select {
		case <-done:
			b, _ = os.ReadFile(console)
			return bytes.Contains(b, []byte(guest.ProbeOK))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// qemuVersion reads "QEMU emulator version 7.2.22 (…)" into "7.2.22".
func qemuVersion(ctx context.Context, qemuBin string) (string, error) {
	out, err := exec.CommandContext(ctx, qemuBin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("run %s --version: %w", qemuBin, err)
	}
	f := strings.Fields(string(out))
	for i, w := range f {
		if w == "version" && i+1 < len(f) {
			return f[i+1], nil
		}
	}
	return "", fmt.Errorf("%s --version said %q", qemuBin, out)
}
