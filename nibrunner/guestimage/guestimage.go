// Package guestimage builds what every nibrunner microVM boots: a guest
// kernel of our own, built from Debian's kernel source package
// (linux-source-6.1) with a minimal configuration (guest.config) and every
// driver built in, an initramfs holding nibrun-init as /init, and a small
// base root filesystem (squashfs) at the bottom of every guest's layer
// stack.
//
// The source is fetched with apt-get download and unpacked into the image
// folder: nothing is installed on the host, and the host's own kernel is
// irrelevant. A build is cached: the kernel by a hash of the source
// package, the fragment and the compiler's version; the image's Version by
// a hash of its inputs (that kernel, init binary, CA bundle, layout), and a
// second Build with the same inputs only re-hashes them.
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
// boots the kernel's ELF image (vmlinux) through its PVH entry point; 5:
// the kernel is built from source, with no modules.
const layoutVersion = "guestimage/5"

// Image is a built guest image.
type Image struct {
	// Version identifies the image (reported as versions.guestImage and
	// stamped on snapshots): "gi-" and 16 hex digits of the inputs' hash.
	Version string `json:"version"`
	// KernelRelease is the guest kernel's release, e.g. 6.1.192.
	KernelRelease string `json:"kernelRelease"`
	// Kernel is the kernel QEMU boots through its PVH entry point: the
	// ELF image (vmlinux) built from SourcePackage.
	Kernel string `json:"kernel"`
	Initrd string `json:"initrd"` // gzip'd newc cpio
	Base   string `json:"base"`   // base root squashfs
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
	// One builder at a time per folder (tests and install may race).
	unlock, err := lockFolder(ctx, dir)
	if err != nil {
		return Image{}, fmt.Errorf("guest image folder: %w", err)
	}
	defer unlock()

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

	kb, err := kernelBuildOf(ctx, filepath.Join(dir, "kernel", "debs"))
	if err != nil {
		return Image{}, err
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte(layoutVersion), []byte(kb.key), []byte(fmt.Sprint(baseDirs, baseFiles)), initBin, ca} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	version := "gi-" + hex.EncodeToString(h.Sum(nil))[:16]
	if img, err := Load(dir); err == nil && img.Version == version {
		return img, nil
	}

	k, err := findKernel(ctx, filepath.Join(dir, "kernel"), kb)
	if err != nil {
		return Image{}, err
	}
	img := Image{
		Version:       version,
		KernelRelease: k.Release,
		Kernel:        k.Vmlinux,
		Initrd:        filepath.Join(dir, "initrd-"+version+".cpio.gz"),
		Base:          filepath.Join(dir, "base-"+version+".squashfs"),
	}
	kcfg, err := readKernelConfig(k.Config)
	if err != nil {
		return Image{}, err
	}
	img.NoMemoryReturn = kcfg.memoryReturn()
	initrd, err := buildInitrd(initBin)
	if err != nil {
		return Image{}, err
	}
	if err := atomicfile.WriteFile(img.Initrd, initrd, 0o644); err != nil {
		return Image{}, fmt.Errorf("write initramfs: %w", err)
	}
	if err := buildBase(ctx, img.Base, ca); err != nil {
		return Image{}, err
	}
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := atomicfile.WriteFile(filepath.Join(dir, "image.json"), append(b, '\n'), 0o644); err != nil {
		return Image{}, fmt.Errorf("write guest image manifest: %w", err)
	}
	removeOlder(dir, version)
	return img, nil
}

// buildInitrd makes the gzip'd cpio: /init, the mount points and console
// node the init needs before it has mounted devtmpfs, and an empty module
// load order: the kernel has every driver built in.
func buildInitrd(initBin []byte) ([]byte, error) {
	var buf bytes.Buffer
	gz, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	c := newCpioWriter(gz)
	for _, d := range []string{"dev", "proc", "sys", "run", "mnt", "newroot", "lib", "lib/modules"} {
		c.Dir(d, 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	c.CharDev("dev/null", 0o666, 1, 3)
	c.File("init", 0o755, initBin)
	c.File(strings.TrimPrefix(guest.ModulesOrderFile, "/"), 0o644, nil)
	if err := c.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// findKernel returns kb's kernel from dir, else copies it there from the
// kernels built ahead of time (KernelPrebuilt), else builds it there.
func findKernel(ctx context.Context, dir string, kb kernelBuild) (Kernel, error) {
	if k, err := loadKernel(dir, kb.key); err == nil {
		return k, nil
	}
	if ahead, err := loadKernel(KernelPrebuilt(), kb.key); err == nil {
		return copyKernel(ahead, dir, kb.key)
	}
	return buildKernel(ctx, dir, kb)
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

// lockFolder makes dir if need be and holds its .lock exclusively until
// the returned func runs.
func lockFolder(ctx context.Context, dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := waitForLock(ctx, lock); err != nil {
		lock.Close()
		return nil, err
	}
	return func() { lock.Close() }, nil
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
