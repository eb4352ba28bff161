package jail

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Bind is one host path made visible in a jail's root, at the same path:
// the VMM's command line names its files as the host does, so the device
// arguments (and a snapshot's machine hash) do not depend on the jail.
type Bind struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"readOnly"`
	// Dev keeps device nodes usable (the /dev entries); every other bind
	// is nodev and nosuid.
	Dev bool `json:"dev,omitempty"`
}

// Files are one guest's files, as the VMM's command line names them.
type Files struct {
	// Program is the VMM's binary.
	Program string
	// ReadOnly are the kernel, initrd, base image, layers and config
	// drive.
	ReadOnly []string
	// ReadWrite are the volume and the folder the VMM makes its sockets
	// and console in.
	ReadWrite []string
	// KVM binds /dev/kvm.
	KVM bool
}

// SystemPaths are the host's folders a dynamically linked QEMU needs to
// start: its libraries and firmware live under /usr, and the top-level
// names are Debian's merged-/usr symlinks into it (replicated as links, or
// bound read-only on a host where they are folders). Nothing in them is a
// guest's or the daemon's.
var SystemPaths = []string{"/usr", "/lib", "/lib64", "/bin", "/sbin"}

// devices are the character devices QEMU opens beside /dev/kvm.
var devices = []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"}

// RootBinds is the plan of a guest's root: every path absolute and clean,
// none of them the root itself, each bound once (read-write wins), in an
// order that binds a folder before anything under it.
func RootBinds(f Files) ([]Bind, error) {
	var out []Bind
	seen := map[string]int{}
	add := func(p string, ro, dev bool) error {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return fmt.Errorf("jail: %q is not a clean absolute path below /", p)
		}
		if i, ok := seen[p]; ok {
			out[i].ReadOnly = out[i].ReadOnly && ro
			return nil
		}
		seen[p] = len(out)
		out = append(out, Bind{Path: p, ReadOnly: ro, Dev: dev})
		return nil
	}
	if f.Program == "" {
		return nil, fmt.Errorf("jail: no VMM binary")
	}
	if err := add(f.Program, true, false); err != nil {
		return nil, err
	}
	for _, p := range f.ReadOnly {
		if err := add(p, true, false); err != nil {
			return nil, err
		}
	}
	for _, p := range f.ReadWrite {
		if err := add(p, false, false); err != nil {
			return nil, err
		}
	}
	devs := devices
	if f.KVM {
		devs = append(slices.Clip(devs), "/dev/kvm")
	}
	for _, p := range devs {
		if err := add(p, false, true); err != nil {
			return nil, err
		}
	}
	// A read-only path under a system folder (a QEMU in /usr/bin) is
	// visible through the folder already.
	out = slices.DeleteFunc(out, func(b Bind) bool {
		for _, s := range SystemPaths {
			if !b.ReadOnly {
				break
			}
			if strings.HasPrefix(b.Path, s+"/") {
				return true
			}
		}
		return false
	})
	slices.SortStableFunc(out, func(a, b Bind) int { return strings.Count(a.Path, "/") - strings.Count(b.Path, "/") })
	return out, nil
}
