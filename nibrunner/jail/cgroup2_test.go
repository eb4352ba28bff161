package jail

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/guestimage"
)

// This machine's cgroups are v1, so the v2 code is proven inside a
// microVM of ours: the guest image's kernel boots with this package's test
// binary as its PID 1, which mounts cgroup2 and runs
// TestCgroupV2HoldsLimitsForReal there.

const (
	inVMEnv  = "NIBRUN_JAIL_IN_VM"
	hogEnv   = "NIBRUN_JAIL_HOG"  // a child that joins the cgroup named and eats memory
	spinEnv  = "NIBRUN_JAIL_SPIN" // a child that joins the cgroup named and spins
	resultOK = "NIBRUN-JAIL-V2 PASS"
)

func TestMain(m *testing.M) {
	// Before the PID 1 case: the launcher's program is PID 1 of its own
	// namespace.
	if jail := launcherTestMain(); jail >= 0 {
		os.Exit(jail)
	}
	switch {
	case os.Getpid() == 1:
		os.Exit(guestInit(m))
	case os.Getenv(hogEnv) != "":
		join(os.Getenv(hogEnv))
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = 1
			}
			hogged = append(hogged, b)
		}
	case os.Getenv(spinEnv) != "":
		join(os.Getenv(spinEnv))
		for n := 0; ; n++ {
			spun = n
		}
	}
	os.Exit(m.Run())
}

// spun is what the spinning child writes, so its loop is not empty; hogged
// is what the hog keeps.
var (
	spun   int
	hogged [][]byte
)

func join(procs string) {
	if err := os.WriteFile(procs, []byte("0"), 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

// guestInit is PID 1 of the microVM: the pseudo-filesystems, cgroup2,
// the one test, its verdict on the console, and the end of the VM.
func guestInit(m *testing.M) int {
	defer func() { _ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART) }()
	for _, mnt := range []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"}, {"sysfs", "/sys", "sysfs"}, {"tmpfs", "/tmp", "tmpfs"}, {"devtmpfs", "/dev", "devtmpfs"},
		{"cgroup2", "/sys/fs/cgroup", "cgroup2"},
	} {
		if err := unix.Mount(mnt.src, mnt.dst, mnt.fs, 0, ""); err != nil {
			fmt.Printf("mount %s: %v\n", mnt.dst, err)
			return 1
		}
	}
	os.Setenv(inVMEnv, "1")
	os.Args = []string{"/init", "-test.run=^TestCgroupV2HoldsLimitsForReal$", "-test.v"}
	code := m.Run()
	if code == 0 {
		fmt.Println(resultOK)
	}
	unix.Sync()
	return code
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestCgroupV2HoldsLimitsForReal runs only inside the microVM (see
// TestTheCgroupV2CodeRunsInAMicroVM, which fails when it does not pass).
func TestCgroupV2HoldsLimitsForReal(t *testing.T) {
	if os.Getenv(inVMEnv) != "1" {
		t.Skip("runs as PID 1 of a microVM; TestTheCgroupV2CodeRunsInAMicroVM runs it")
	}
	const mount = "/sys/fs/cgroup"
	// The daemon under a delegated unit: it moves itself to a leaf and
	// puts the guests beside it.
	if err := os.Mkdir(filepath.Join(mount, "unit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MoveSelf(mount, "unit"); err != nil {
		t.Fatal(err)
	}
	guests, leaf, err := DelegatedParent(mount)
	if err != nil || guests != "unit/guests" || leaf != "unit/daemon" {
		t.Fatalf("in unit/: guests %q, daemon %q, %v", guests, leaf, err)
	}
	if err := MoveSelf(mount, leaf); err != nil {
		t.Fatal(err)
	}
	c, err := Detect(mount, guests)
	if err != nil || c.Version != V2 {
		t.Fatalf("detect: %+v %v", c, err)
	}
	if err := c.Setup(50); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(mount, guests, "cpu.weight")); got != "50" {
		t.Errorf("the guests' cpu.weight is %s", got)
	}
	l := Limits{CPUQuotaUs: 20000, CPUPeriodUs: 100000, MemoryMax: 32 << 20, PIDsMax: 16}
	procs, err := c.Create("g", l)
	if err != nil {
		t.Fatal(err)
	}
	dir := c.Dir("", "g")
	for f, want := range map[string]string{"cpu.max": "20000 100000", "memory.max": "33554432", "memory.swap.max": "0", "pids.max": "16", "memory.oom.group": "1"} {
		if got := readTrim(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s is %q, want %q", f, got, want)
		}
	}
	if err := c.SetMemory("g", l.WhileSnapshotting(32)); err != nil {
		t.Fatal(err)
	}
	if got := readTrim(t, filepath.Join(dir, "memory.max")); got != "67108864" {
		t.Errorf("raised memory.max is %s", got)
	}
	if err := c.SetMemory("g", l); err != nil {
		t.Fatal(err)
	}

	// A process past memory.max is killed, and counted.
	hog := exec.Command("/proc/self/exe")
	hog.Env = []string{hogEnv + "=" + procs[0]}
	err = hog.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the hog ended with %v, want SIGKILL", err)
	}
	if n := c.OOMKilled("g"); n < 1 {
		t.Errorf("oom_kill count %d after the hog's kill", n)
	}

	// A spinning process gets its quota: 20% of a CPU.
	spin := exec.Command("/proc/self/exe")
	spin.Env = []string{spinEnv + "=" + procs[0]}
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	stat := readTrim(t, filepath.Join(dir, "cpu.stat"))
	_ = spin.Process.Kill()
	_ = spin.Wait()
	if !strings.Contains(stat, "nr_throttled") || strings.Contains(stat, "nr_throttled 0\n") {
		t.Errorf("the spinner was not throttled: %s", stat)
	}
	t.Logf("cpu.stat after 2 s of spinning at 20%%:\n%s", stat)
	for i := 0; ; i++ {
		err := c.Remove("g")
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("%s outlived Remove", dir)
	}
}

func TestTheCgroupV2CodeRunsInAMicroVM(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the guest image is amd64")
	}
	qemu := testenv.RequireCommand(t, "qemu-system-x86_64", "mksquashfs", "mke2fs", "apt-get", "dpkg-deb")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	img, err := guestimage.Build(ctx, testenv.GuestImageDir())
	if err != nil {
		t.Fatalf("build the guest image: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "init")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test binary: %v\n%s", err, out)
	}
	initBin, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	initrd, err := guestimage.InitramfsOf(initBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "initrd"), initrd, 0o644); err != nil {
		t.Fatal(err)
	}
	console := filepath.Join(dir, "console.log")
	vm := exec.CommandContext(ctx, qemu, "-M", "microvm,rtc=off", "-accel", "tcg,tb-size=32", "-m", "256", "-smp", "1",
		"-nodefaults", "-no-user-config", "-nographic", "-no-reboot", "-serial", "file:"+console,
		"-kernel", img.Kernel, "-initrd", filepath.Join(dir, "initrd"),
		"-append", "console=ttyS0 reboot=t panic=-1 quiet tsc_early_khz=2000000 rdinit=/init")
	out, err := vm.CombinedOutput()
	log, _ := os.ReadFile(console)
	if err != nil || !strings.Contains(string(log), resultOK) {
		t.Fatalf("the test in the microVM did not pass (QEMU: %v %s):\n%s", err, out, log)
	}
	t.Logf("in the microVM (kernel %s):\n%s", img.KernelRelease, log)
}
