// Package guestimage builds what every nibrunner microVM boots: Debian's
// cloud kernel, an initramfs holding nibrun-init as /init with the kernel
// modules it loads, and a small base root filesystem (squashfs) at the
// bottom of every guest's layer stack.
//
// The kernel is fetched with apt-get download and unpacked with dpkg-deb
// -x into the image folder: nothing is installed on the host, and the host's
// own kernel is irrelevant. A build is cached: the image's Version is a
// hash of its inputs (kernel package, init binary, module set, CA bundle,
// layout), and a second Build with the same inputs only re-hashes them.
package guestimage

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/flock"
	"alpnib.dev/nibrunner/guest"
)

// layoutVersion changes whenever this package changes what it puts in an
// image, so that images built by an older nibrunnerd are rebuilt.
// 2: the base root's folders are 0755 whatever the umask; 3: the balloon
// module (virtio_balloon) is loaded when the kernel has it as one; 4: QEMU
// boots the kernel's ELF image (vmlinux) through its PVH entry point.
const layoutVersion = "guestimage/4"

// Image is a built guest image.
type Image struct {
	// Version identifies the image (reported as versions.guestImage and
	// stamped on snapshots): "gi-" and 16 hex digits of the inputs' hash.
	Version string `json:"version"`
	// KernelRelease is the guest kernel's release, e.g. 6.1.0-57-cloud-amd64.
	KernelRelease string `json:"kernelRelease"`
	// Kernel is the kernel QEMU boots: the ELF image taken out of the
	// package's bzImage (see vmlinux.go), or the bzImage itself when
	// that cannot be done, and BzImage says why.
	Kernel  string `json:"kernel"`
	BzImage string `json:"bzImage,omitempty"`
	Initrd  string `json:"initrd"` // gzip'd newc cpio
	Base    string `json:"base"`   // base root squashfs
	// Modules are the module files in the initramfs, in load order.
	Modules []string `json:"modules"`
	// NoMemoryReturn, when set, says what the kernel lacks to hand the
	// memory a guest frees back to the host (free page reporting through
	// the virtio balloon); the guests run, each holding every page it
	// ever touched.
	NoMemoryReturn string `json:"noMemoryReturn,omitempty"`
}

// Options adjust Build; the zero value is what nibrunnerd install uses.
type Options struct {
	// Init is a nibrun-init binary; empty looks for one (see findInit).
	Init string
	// CABundle is the CA bundle copied into the base root; empty means
	// /etc/ssl/certs/ca-certificates.crt.
	CABundle string
	// KernelPackage pins the versioned kernel package instead of asking apt
	// what linux-image-cloud-amd64 depends on.
	KernelPackage string
}

// Build builds (or finds already built) the guest image in dir.
func Build(ctx context.Context, dir string) (Image, error) {
	return BuildWith(ctx, dir, Options{})
}

// Load returns the image a previous Build left in dir, without building.
func Load(dir string) (Image, error) {
	var img Image
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		return img, fmt.Errorf("read guest image manifest: %w", err)
	}
	if err := json.Unmarshal(b, &img); err != nil {
		return img, fmt.Errorf("read guest image manifest: %w", err)
	}
	for _, p := range []string{img.Kernel, img.Initrd, img.Base} {
		if _, err := os.Stat(p); err != nil {
			return img, fmt.Errorf("guest image %s is incomplete: %w", img.Version, err)
		}
	}
	return img, nil
}

// BuildWith is Build with options.
func BuildWith(ctx context.Context, dir string, opt Options) (Image, error) {
	// The manifest records absolute paths: QEMU and the daemon open them
	// from wherever they run.
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Image{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Image{}, fmt.Errorf("make guest image folder: %w", err)
	}
	// One builder at a time per folder (tests and install may race).
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return Image{}, err
	}
	defer lock.Close()
	if err := waitForLock(ctx, lock); err != nil {
		return Image{}, err
	}

	pkg, release := opt.KernelPackage, ""
	if pkg == "" {
		if pkg, release, err = resolveKernelPackage(ctx); err != nil {
			return Image{}, err
		}
	} else if m := kernelPackageRE.FindStringSubmatch(pkg); m != nil {
		release = m[1]
	} else {
		return Image{}, fmt.Errorf("%q is not a cloud kernel package name", pkg)
	}
	initPath, err := findInit(ctx, opt.Init, filepath.Join(dir, "build"))
	if err != nil {
		return Image{}, err
	}
	initBin, err := os.ReadFile(initPath)
	if err != nil {
		return Image{}, fmt.Errorf("read nibrun-init: %w", err)
	}
	caPath := opt.CABundle
	if caPath == "" {
		caPath = CACertificates
	}
	ca, err := os.ReadFile(caPath)
	if err != nil {
		return Image{}, fmt.Errorf("read the CA bundle for the guest: %w", err)
	}

	h := sha256.New()
	for _, part := range [][]byte{[]byte(layoutVersion), []byte(pkg), []byte(strings.Join(GuestModules, ",")), []byte(fmt.Sprint(baseDirs, baseFiles)), initBin, ca} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	version := "gi-" + hex.EncodeToString(h.Sum(nil))[:16]
	if img, err := Load(dir); err == nil && img.Version == version {
		return img, nil
	}

	tree, err := fetchKernel(ctx, filepath.Join(dir, "kernel"), pkg)
	if err != nil {
		return Image{}, err
	}
	img := Image{
		Version:       version,
		KernelRelease: release,
		Kernel:        filepath.Join(tree, "boot", "vmlinuz-"+release),
		Initrd:        filepath.Join(dir, "initrd-"+version+".cpio.gz"),
		Base:          filepath.Join(dir, "base-"+version+".squashfs"),
	}
	if _, err := os.Stat(img.Kernel); err != nil {
		return Image{}, fmt.Errorf("kernel package %s holds no kernel: %w", pkg, err)
	}
	if elf, err := writeVmlinux(img.Kernel, filepath.Join(tree, "boot", "vmlinux-"+release)); err != nil {
		img.BzImage = fmt.Sprintf("QEMU boots the bzImage, each guest's QEMU holding a copy of it: %v", err)
	} else {
		img.Kernel = elf
	}
	kcfg, err := readKernelConfig(filepath.Join(tree, "boot", "config-"+release))
	if err != nil {
		return Image{}, err
	}
	img.NoMemoryReturn = kcfg.memoryReturn()
	km, err := readKernelModules(filepath.Join(tree, "lib", "modules", release))
	if err != nil {
		return Image{}, err
	}
	modules := GuestModules
	if kcfg["CONFIG_VIRTIO_BALLOON"] == "m" {
		modules = append(modules[:len(modules):len(modules)], balloonModule)
	}
	order, err := km.loadOrder(modules)
	if err != nil {
		return Image{}, err
	}
	initrd, err := buildInitrd(km.root, order, initBin)
	if err != nil {
		return Image{}, err
	}
	if err := atomicfile.WriteFile(img.Initrd, initrd, 0o644); err != nil {
		return Image{}, fmt.Errorf("write initramfs: %w", err)
	}
	if err := buildBase(ctx, img.Base, ca); err != nil {
		return Image{}, err
	}
	for _, rel := range order {
		img.Modules = append(img.Modules, filepath.Base(rel))
	}
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, "image.json"), append(b, '\n'), 0o644); err != nil {
		return Image{}, fmt.Errorf("write guest image manifest: %w", err)
	}
	removeOlder(dir, version)
	return img, nil
}

// buildInitrd makes the gzip'd cpio: /init, the module files and their load
// order, and the mount points and console node the init needs before it
// has mounted devtmpfs.
func buildInitrd(modRoot string, order []string, initBin []byte) ([]byte, error) {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	c := newCpioWriter(gz)
	for _, d := range []string{"dev", "proc", "sys", "run", "mnt", "newroot", "lib", "lib/modules"} {
		c.Dir(d, 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	c.CharDev("dev/null", 0o666, 1, 3)
	c.File("init", 0o755, initBin)
	var names []string
	for _, rel := range order {
		b, err := os.ReadFile(filepath.Join(modRoot, rel))
		if err != nil {
			return nil, fmt.Errorf("read kernel module: %w", err)
		}
		name := filepath.Base(rel)
		names = append(names, name)
		c.File(strings.TrimPrefix(guest.ModulesDir, "/")+"/"+name, 0o644, b)
	}
	c.File(strings.TrimPrefix(guest.ModulesOrderFile, "/"), 0o644, []byte(strings.Join(names, "\n")+"\n"))
	if err := c.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// removeOlder deletes initramfs and base files of other versions. A guest
// still running from one keeps its open file; a snapshot of it fails its
// stamp check and boots cold.
func removeOlder(dir, version string) {
	for _, pat := range []string{"initrd-*.cpio.gz", "base-*.squashfs"} {
		old, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range old {
			if !strings.Contains(filepath.Base(p), version) {
				_ = os.Remove(p)
			}
		}
	}
}

// waitForLock takes an exclusive lock on f, giving up when ctx ends.
func waitForLock(ctx context.Context, f *os.File) error {
	for {
		held, err := flock.Try(f, flock.Exclusive)
		if err != nil {
			return fmt.Errorf("lock guest image folder: %w", err)
		}
		if held {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for another guest image build: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
