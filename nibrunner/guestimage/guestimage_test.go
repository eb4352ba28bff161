package guestimage

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// readCpio parses a newc archive back into name -> (mode, data).
func readCpio(t *testing.T, b []byte) map[string]struct {
	mode uint64
	data []byte
} {
	t.Helper()
	out := map[string]struct {
		mode uint64
		data []byte
	}{}
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		h := string(b[off : off+110])
		if !strings.HasPrefix(h, "070701") {
			t.Fatalf("bad magic at %d: %q", off, h[:6])
		}
		field := func(i int) int {
			v, err := strconv.ParseUint(h[6+8*i:14+8*i], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
		mode, size, nameSize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		dataOff := align(off + 110 + nameSize)
		if name == "TRAILER!!!" {
			return out
		}
		out[name] = struct {
			mode uint64
			data []byte
		}{uint64(mode), b[dataOff : dataOff+size]}
		off = align(dataOff + size)
	}
}

func TestTheCpioWriterWritesWhatTheNewcFormatReadsBack(t *testing.T) {
	var buf bytes.Buffer
	c := newCpioWriter(&buf)
	c.Dir("dev", 0o755)
	c.CharDev("dev/console", 0o600, 5, 1)
	c.File("init", 0o755, []byte("odd-length"))
	c.File("empty", 0o644, nil)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := readCpio(t, buf.Bytes())
	if got["init"].mode != 0o100755 || string(got["init"].data) != "odd-length" {
		t.Errorf("init = %o %q", got["init"].mode, got["init"].data)
	}
	if got["dev"].mode != 0o040755 || got["dev/console"].mode != 0o020600 {
		t.Errorf("dev = %o, dev/console = %o", got["dev"].mode, got["dev/console"].mode)
	}
	if _, ok := got["empty"]; !ok {
		t.Error("the empty file is missing")
	}
	if cpio, err := exec.LookPath("cpio"); err == nil {
		cmd := exec.Command(cpio, "-t")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "dev/console") {
			t.Errorf("GNU cpio cannot list the archive: %v\n%s", err, out)
		}
	}
}

// imageDir is shared by the tests in this package run so the kernel is
// fetched once.
func imageDir(t *testing.T) string {
	t.Helper()
	testenv.RequireCommand(t, "apt-get", "dpkg-deb", "mksquashfs", "go")
	if _, err := os.Stat(CACertificates); err != nil {
		testenv.Missing(t, "needs the ca-certificates package")
	}
	return testenv.GuestImageDir()
}

func TestTheImageBuildsWithItsOwnKernelAndInitAndASecondBuildIsCached(t *testing.T) {
	dir := imageDir(t)
	// Without a kernel built ahead (make setup builds one) this build
	// compiles it: minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	img, err := Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(img.Version, "gi-") || !strings.HasPrefix(img.KernelRelease, "6.1.") {
		t.Errorf("version %q, kernel release %q", img.Version, img.KernelRelease)
	}
	// QEMU boots the built ELF image through its PVH entry point.
	if k, err := os.ReadFile(img.Kernel); err != nil || checkPVH(k) != nil {
		t.Errorf("kernel %s is not an ELF image with a PVH entry point (read: %v)", img.Kernel, err)
	}
	if img.NoMemoryReturn != "" {
		t.Errorf("the built kernel cannot hand memory back: %s", img.NoMemoryReturn)
	}
	// Everything the guest uses is built in, and nothing can be loaded.
	cfg, err := readKernelConfig(filepath.Join(filepath.Dir(img.Kernel), "config"))
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []string{"CONFIG_VIRTIO_MMIO", "CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES", "CONFIG_VIRTIO_BLK", "CONFIG_VIRTIO_NET", "CONFIG_VIRTIO_CONSOLE", "CONFIG_VIRTIO_BALLOON", "CONFIG_SQUASHFS", "CONFIG_OVERLAY_FS", "CONFIG_EXT4_FS", "CONFIG_PVH", "CONFIG_CGROUPS"} {
		if cfg[opt] != "y" {
			t.Errorf("%s=%q, want y", opt, cfg[opt])
		}
	}
	for _, opt := range []string{"CONFIG_MODULES", "CONFIG_DEBUG_INFO", "CONFIG_DEBUG_INFO_BTF", "CONFIG_UNWINDER_ORC"} {
		if v, ok := cfg[opt]; ok {
			t.Errorf("%s=%s, want it not set", opt, v)
		}
	}
	f, err := os.Open(img.Initrd)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	files := readCpio(t, raw)
	if files["init"].mode&0o111 == 0 || len(files["init"].data) < 1<<20 {
		t.Errorf("/init is missing or not executable")
	}
	// Built from this tree: without DWARF or a symbol table, which would
	// sit in every guest's RAM.
	if f, err := elf.NewFile(bytes.NewReader(files["init"].data)); err != nil {
		t.Errorf("/init is not ELF: %v", err)
	} else if f.Section(".debug_info") != nil || f.Section(".symtab") != nil {
		t.Errorf("/init (%d bytes) carries DWARF or a symbol table", len(files["init"].data))
	}
	if order, ok := files["lib/modules/load-order"]; !ok || len(order.data) != 0 {
		t.Errorf("the module load order is missing or names modules: %q", order.data)
	}
	b, err := os.ReadFile(img.Base)
	if err != nil || !bytes.HasPrefix(b, []byte("hsqs")) {
		t.Fatalf("base root is not a squashfs: %v", err)
	}
	if unsq, err := exec.LookPath("unsquashfs"); err == nil {
		out, err := exec.Command(unsq, "-lls", img.Base).CombinedOutput()
		if err != nil {
			t.Fatalf("unsquashfs: %v\n%s", err, out)
		}
		for _, want := range []string{"drwxrwxrwt root/root", "squashfs-root/etc/ssl/certs/ca-certificates.crt", "squashfs-root/etc/passwd"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("base root lacks %q:\n%s", want, out)
			}
		}
	}
	before := statAll(t, img.Initrd, img.Base, filepath.Join(dir, "image.json"))
	again, err := Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != img.Version || again.Initrd != img.Initrd {
		t.Errorf("second build changed the image: %+v vs %+v", again, img)
	}
	// Cached means nothing was written again: the same files, untouched.
	for path, was := range statAll(t, img.Initrd, img.Base, filepath.Join(dir, "image.json")) {
		if b := before[path]; !os.SameFile(b, was) || !b.ModTime().Equal(was.ModTime()) {
			t.Errorf("second build rewrote %s; it should have been cached", path)
		}
	}
}

func statAll(t *testing.T, paths ...string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = fi
	}
	return out
}
