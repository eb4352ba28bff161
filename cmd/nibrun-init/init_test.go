package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

func TestTheKernelCommandLineGivesTheNetworkParameters(t *testing.T) {
	p := parseParams("console=ttyS0 quiet nibrun.ip=10.201.0.6/30 nibrun.gw=10.201.0.5 virtio_mmio.device=512@0xfeb00e00:12 nibrun.ip=10.201.0.10/30")
	if p["nibrun.ip"] != "10.201.0.10/30" || p["nibrun.gw"] != "10.201.0.5" || p["virtio_mmio.device"] != "512@0xfeb00e00:12" {
		t.Errorf("params %v", p)
	}
	if _, ok := p["quiet"]; ok {
		t.Error("a flag without a value was taken as a parameter")
	}
}

func TestImagesAreToldApartByTheirMagic(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, at int, magic []byte) string {
		b := make([]byte, 4096)
		copy(b[at:], magic)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if fs, err := fsType(write("sq", 0, []byte("hsqs"))); err != nil || fs != "squashfs" {
		t.Errorf("squashfs: %q, %v", fs, err)
	}
	if fs, err := fsType(write("ext", 1080, []byte{0x53, 0xEF})); err != nil || fs != "ext4" {
		t.Errorf("ext4: %q, %v", fs, err)
	}
	if _, err := fsType(write("zip", 0, []byte("PK\x03\x04"))); err == nil {
		t.Error("a zip was taken for a filesystem")
	}
	if err := mountImage(filepath.Join(dir, "sq"), filepath.Join(dir, "mnt"), false); err == nil {
		t.Error("a squashfs was accepted as the writable volume")
	}
}

func TestASignalledTenantExitsWith128PlusTheSignal(t *testing.T) {
	// Wait statuses as the kernel encodes them: exit code in the high
	// byte, the signal number in the low seven bits.
	if c := exitCode(unix.WaitStatus(3 << 8)); c != 3 {
		t.Errorf("exit 3 gave %d", c)
	}
	if c := exitCode(unix.WaitStatus(syscall.SIGKILL)); c != 137 {
		t.Errorf("SIGKILL gave %d", c)
	}
}

func TestAMeasurementReadsMemoryFromProc(t *testing.T) {
	m, err := measure()
	if err != nil {
		t.Fatal(err)
	}
	if m.MemoryTotalBytes == 0 || m.MemoryAvailableBytes == 0 || m.MemoryAvailableBytes > m.MemoryTotalBytes || m.UptimeMs == 0 || m.CPUTimeMs == 0 {
		t.Errorf("measurement %+v", m)
	}
}

func TestAFullQueueDropsLogsButNeverBlocksAnExitCode(t *testing.T) {
	c := &control{q: make(chan guest.Message, 2)}
	c.send(guest.Message{Kind: guest.KindLog, Data: "a"})
	c.send(guest.Message{Kind: guest.KindLog, Data: "b"})
	c.send(guest.Message{Kind: guest.KindLog, Data: "c"}) // dropped
	code := 3
	c.send(guest.Message{Kind: guest.KindExited, ExitCode: &code}) // makes room
	if n := c.dropped.Load(); n != 2 {
		t.Errorf("dropped %d, want 2", n)
	}
	first, second := <-c.q, <-c.q
	if first.Data != "b" || second.Kind != guest.KindExited {
		t.Errorf("queue holds %+v then %+v", first, second)
	}
}

func TestTheReportingOrderTheHostAsksForIsWrittenToTheKernel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "page_reporting_order")
	if err := os.WriteFile(file, []byte("9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() string {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := setReportingOrder("", file); err != nil || read() != "9\n" {
		t.Errorf("no order asked: err %v, file %q (want it untouched)", err, read())
	}
	if err := setReportingOrder("5", file); err != nil || read() != "5" {
		t.Errorf("order 5: err %v, file %q", err, read())
	}
	for _, bad := range []string{"11", "-1", "five", "5 "} {
		if err := setReportingOrder(bad, file); err == nil {
			t.Errorf("order %q was accepted", bad)
		}
	}
	if read() != "5" {
		t.Errorf("a refused order changed the file to %q", read())
	}
	if err := setReportingOrder("5", filepath.Join(t.TempDir(), "missing", "order")); err == nil {
		t.Error("a kernel without page reporting (no parameter file) gave no error")
	}
}
