package guestimage

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// GuestModules are the drivers the init needs, by module name. Whichever of
// them the kernel has built in is skipped; the rest come with their
// dependencies. ext4 (with jbd2, mbcache, crc16) is built into Debian's
// cloud kernel today, but naming it keeps the image right if that changes.
var GuestModules = []string{
	"virtio_mmio", "virtio_blk", "virtio_net", "virtio_console",
	"squashfs", "overlay", "ext4",
}

// balloonModule is the virtio balloon's driver, loaded when the kernel
// builds it as a module: through it the guest reports the pages it frees,
// and QEMU hands them back to the host.
const balloonModule = "virtio_balloon"

// moduleName normalises a module or file name: the kernel treats - and _
// alike in module names.
func moduleName(s string) string {
	s = path.Base(s)
	s = strings.TrimSuffix(s, ".ko")
	return strings.ReplaceAll(s, "-", "_")
}

// kernelModules is one kernel's module tree: which modules are built in and
// where the loadable ones live.
type kernelModules struct {
	root    string            // /lib/modules/<version>
	builtin map[string]bool   // by module name
	files   map[string]string // module name -> path relative to root
}

// readKernelModules reads modules.builtin and modules.order. The Debian
// package ships no modules.dep (depmod makes it at install time), so
// dependencies are read from each module's own .modinfo section instead.
func readKernelModules(root string) (*kernelModules, error) {
	km := &kernelModules{root: root, builtin: map[string]bool{}, files: map[string]string{}}
	if err := eachLine(filepath.Join(root, "modules.builtin"), func(l string) {
		km.builtin[moduleName(l)] = true
	}); err != nil {
		return nil, err
	}
	err := filepath.WalkDir(filepath.Join(root, "kernel"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			rel, _ := filepath.Rel(root, p)
			km.files[moduleName(p)] = rel
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list kernel modules under %s: %w", root, err)
	}
	return km, nil
}

func eachLine(p string, f func(string)) error {
	b, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("read %s: %w", p, err)
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if l := strings.TrimSpace(s.Text()); l != "" {
			f(l)
		}
	}
	return s.Err()
}

// depends reads the "depends=" entry of a module's .modinfo section.
func depends(file string) ([]string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read module %s: %w", file, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return nil, nil
	}
	data, err := sec.Data()
	if err != nil {
		return nil, fmt.Errorf("read .modinfo of %s: %w", file, err)
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			if len(v) == 0 {
				return nil, nil
			}
			var out []string
			for _, d := range strings.Split(string(v), ",") {
				out = append(out, moduleName(d))
			}
			return out, nil
		}
	}
	return nil, nil
}

// loadOrder returns the loadable modules needed for want, each after its
// dependencies, as paths relative to the module root. A wanted module that
// is neither built in nor present is an error.
func (km *kernelModules) loadOrder(want []string) ([]string, error) {
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name, from string) error
	visit = func(name, from string) error {
		name = moduleName(name)
		if km.builtin[name] || state[name] == 2 {
			return nil
		}
		if state[name] == 1 {
			return fmt.Errorf("kernel module dependency cycle through %s", name)
		}
		rel, ok := km.files[name]
		if !ok {
			if from != "" {
				return fmt.Errorf("kernel module %s (needed by %s) is neither built in nor shipped", name, from)
			}
			return fmt.Errorf("kernel module %s is neither built in nor shipped", name)
		}
		state[name] = 1
		deps, err := depends(filepath.Join(km.root, rel))
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, name); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, rel)
		return nil
	}
	for _, w := range want {
		if err := visit(w, ""); err != nil {
			return nil, err
		}
	}
	return order, nil
}
