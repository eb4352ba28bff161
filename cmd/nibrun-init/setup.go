package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
)

func mountKernelFilesystems() error {
	for _, m := range []struct{ src, dst, fs string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/run", "tmpfs"},
	} {
		_ = os.MkdirAll(m.dst, 0o755)
		if err := unix.Mount(m.src, m.dst, m.fs, unix.MS_NOSUID, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dst, err)
		}
	}
	return nil
}

// loadModules loads the initramfs's modules in the order the image builder
// wrote, which puts every dependency first. microvm hands the virtio-mmio
// device addresses to the kernel command line, which virtio_mmio reads when
// it loads.
func loadModules() error {
	b, err := os.ReadFile(guest.ModulesOrderFile)
	if err != nil {
		return err
	}
	for _, name := range strings.Fields(string(b)) {
		f, err := os.Open(filepath.Join(guest.ModulesDir, name))
		if err != nil {
			return err
		}
		err = unix.FinitModule(int(f.Fd()), "", 0)
		f.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("load %s: %w", name, err)
		}
	}
	return nil
}

// setReportingOrder writes the free page reporting order the host asked
// for to file, the kernel's parameter: Linux 6.1 reads it from the command
// line and then overwrites it with the pageblock order when the balloon
// registers, which loading the balloon's module has just done. Empty asks
// for nothing.
func setReportingOrder(order, file string) error {
	if order == "" {
		return nil
	}
	if n, err := strconv.ParseUint(order, 10, 8); err != nil || n > 10 {
		return fmt.Errorf("%s=%q: want an order from 0 to 10", guest.ParamReportingOrder, order)
	}
	if err := os.WriteFile(file, []byte(order), 0); err != nil {
		return fmt.Errorf("set the free page reporting order: %w", err)
	}
	return nil
}

// drives maps virtio-blk serials to device paths.
func drives() map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir("/sys/block")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "vd") {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/sys/block", e.Name(), "serial"))
		if err != nil {
			continue
		}
		out[strings.TrimSpace(string(b))] = "/dev/" + e.Name()
	}
	return out
}

// waitDrives waits until every serial in want has a device: virtio probing
// runs asynchronously after the module loads.
func waitDrives(want []string, timeout time.Duration) (map[string]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		got := drives()
		var missing []string
		for _, s := range want {
			if _, err := os.Stat(got[s]); got[s] == "" || err != nil {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 {
			return got, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no drive with serial %s after %v (found %v)", strings.Join(missing, ", "), timeout, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readConfig(timeout time.Duration) (guest.Config, error) {
	d, err := waitDrives([]string{guest.SerialConfig}, timeout)
	if err != nil {
		return guest.Config{}, err
	}
	f, err := os.Open(d[guest.SerialConfig])
	if err != nil {
		return guest.Config{}, err
	}
	defer f.Close()
	buf := make([]byte, guest.MaxConfigBytes+4096)
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return guest.Config{}, err
	}
	return guest.DecodeDrive(buf[:n])
}

const (
	mntBase   = "/mnt/base"
	mntVolume = "/mnt/volume"
	newRoot   = "/newroot"
)

// stackRoot mounts the base, the layers (read-only) and the volume, and
// stacks them with overlayfs at /newroot: the base at the bottom, then the
// layers in order, the volume's upper directory on top.
func stackRoot(cfg guest.Config) (string, error) {
	want := []string{guest.SerialBase, guest.SerialVolume}
	for i := 0; i < cfg.Layers; i++ {
		want = append(want, guest.LayerSerial(i))
	}
	d, err := waitDrives(want, 10*time.Second)
	if err != nil {
		return "", err
	}
	if err := mountImage(d[guest.SerialBase], mntBase, true); err != nil {
		return "", fmt.Errorf("base root: %w", err)
	}
	lowers := []string{mntBase}
	for i := 0; i < cfg.Layers; i++ {
		dst := fmt.Sprintf("/mnt/layer-%d", i)
		if err := mountImage(d[guest.LayerSerial(i)], dst, true); err != nil {
			return "", fmt.Errorf("layer %d: %w", i, err)
		}
		lowers = append(lowers, dst)
	}
	if err := mountImage(d[guest.SerialVolume], mntVolume, false); err != nil {
		return "", fmt.Errorf("volume: %w", err)
	}
	upper := filepath.Join(mntVolume, guest.VolumeUpperDir)
	work := filepath.Join(mntVolume, guest.VolumeWorkDir)
	for _, p := range []string{upper, work} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", err
		}
	}
	// overlayfs lists lower directories topmost first.
	for i, j := 0, len(lowers)-1; i < j; i, j = i+1, j-1 {
		lowers[i], lowers[j] = lowers[j], lowers[i]
	}
	_ = os.MkdirAll(newRoot, 0o755)
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lowers, ":"), upper, work)
	// nosuid: a set-user-ID bit or a file capability in the tenant's own
	// layers or volume gives nothing (the tenant runs as 65534 and keeps
	// to it); nodev: a device node there opens nothing (/dev is the
	// kernel's devtmpfs, mounted on its own below).
	if err := unix.Mount("overlay", newRoot, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return "", fmt.Errorf("mount overlay (%s): %w", opts, err)
	}
	for _, m := range []struct{ src, dst, fs string }{
		{"proc", "proc", "proc"},
		{"devtmpfs", "dev", "devtmpfs"},
		{"sysfs", "sys", "sysfs"},
	} {
		dst := filepath.Join(newRoot, m.dst)
		_ = os.MkdirAll(dst, 0o755)
		if err := unix.Mount(m.src, dst, m.fs, unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
			return "", fmt.Errorf("mount %s in the root: %w", m.fs, err)
		}
	}
	// POSIX shared memory (shm_open, Python's multiprocessing) wants a
	// world-writable tmpfs at /dev/shm.
	shm := filepath.Join(newRoot, "dev", "shm")
	_ = os.MkdirAll(shm, 0o755)
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return "", fmt.Errorf("mount /dev/shm in the root: %w", err)
	}
	return newRoot, nil
}

// mountImage mounts a squashfs or ext4 image, telling them apart by magic.
func mountImage(dev, dst string, readOnly bool) error {
	fs, err := fsType(dev)
	if err != nil {
		return err
	}
	if fs == "squashfs" && !readOnly {
		return fmt.Errorf("%s is a squashfs, which cannot be written", dev)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	// The images are the tenant's: what they carry is never a device nor
	// a set-user-ID program here, whatever their modes say.
	var flags uintptr = unix.MS_NODEV | unix.MS_NOSUID
	if readOnly {
		flags |= unix.MS_RDONLY
	}
	if err := unix.Mount(dev, dst, fs, flags, ""); err != nil {
		return fmt.Errorf("mount %s (%s) on %s: %w", dev, fs, dst, err)
	}
	return nil
}

func fsType(dev string) (string, error) {
	f, err := os.Open(dev)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b := make([]byte, 2048)
	if _, err := f.ReadAt(b, 0); err != nil {
		return "", fmt.Errorf("read %s: %w", dev, err)
	}
	switch {
	case bytes.HasPrefix(b, []byte("hsqs")):
		return "squashfs", nil
	case b[1080] == 0x53 && b[1081] == 0xEF:
		return "ext4", nil
	}
	return "", fmt.Errorf("%s is neither a squashfs nor an ext4 image", dev)
}

// makeWorkingDirectory creates the tenant's working directory in the root
// (with any missing parents) and gives it to 65534.
func makeWorkingDirectory(root, wd string) error {
	if wd == "" {
		wd = "/"
	}
	p := filepath.Join(root, filepath.Clean("/"+wd))
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	if wd == "/" {
		return nil
	}
	return os.Chown(p, guest.TenantUID, guest.TenantGID)
}
