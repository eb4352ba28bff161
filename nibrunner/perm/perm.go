// Package perm holds the modes of what nibrunnerd writes. Its folders
// (state_dir, runtime_dir, snapshot_dir, the volumes and the export
// staging) hold tenants' data — environments with their secrets in the
// state database and the config drives, volumes, memory snapshots, logs —
// so nobody but root, and the folder's group, may read them: folders are
// made Dir and files come out File under the daemon's Umask. A host set up
// by an older daemon, or by hand, is brought in line at start by Tighten.
package perm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The modes the daemon makes things with.
const (
	// Dir is the mode of a folder the daemon makes.
	Dir fs.FileMode = 0o750
	// Secret is the mode of a file only the daemon reads (the state
	// database, a config drive holding a tenant's environment).
	Secret fs.FileMode = 0o600
	// Umask is the daemon's umask: what it creates is never readable by
	// others, and never writable by its group (0640 files, 0750 folders).
	Umask = 0o027
)

// Tightened is one path Tighten changed, with its modes before and after.
type Tightened struct {
	Path     string
	Was, Now fs.FileMode
}

func (t Tightened) String() string {
	return fmt.Sprintf("%s %#o → %#o", t.Path, t.Was.Perm(), t.Now.Perm())
}

// Tighten walks root, which need not exist, and takes away every
// permission others have on the folders and files under it (root
// included), and its group's write: a folder or file found readable by
// anyone is made 0750 or 0640 at most. Symbolic links are not followed,
// and another filesystem mounted below root (a tenant's volume a killed
// daemon left mounted for a checkpoint or an export) is not entered: its
// files are the tenant's, modes included. It returns what it changed.
func Tighten(root string) ([]Tightened, error) {
	var done []Tightened
	var rootDev uint64
	if st, err := os.Lstat(root); err == nil {
		rootDev = device(st)
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // gone while we looked
			}
			return err
		}
		if d.IsDir() && device(info) != rootDev {
			return filepath.SkipDir
		}
		was := info.Mode().Perm()
		now := was &^ (0o007 | 0o020)
		if now == was {
			return nil
		}
		// Set-id and sticky bits are kept as they were.
		if err := os.Chmod(path, info.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)|now); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("tighten %s: %w", path, err)
		}
		done = append(done, Tightened{Path: path, Was: was, Now: now})
		return nil
	})
	return done, err
}

// device is the filesystem info is on.
func device(info fs.FileInfo) uint64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev)
	}
	return 0
}

// MkdirExact makes dir and the folders above it up to root (which holds
// it), and sets each of them, root included, to mode exactly: MkdirAll's
// modes pass through the daemon's Umask, and a tree packed into a guest's
// image (a volume, an executable layer) must not depend on it, since the
// tenant there is not the host's root.
func MkdirExact(root, dir string, mode fs.FileMode) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%s is not under %s", dir, root)
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := os.Chmod(d, mode); err != nil {
			return err
		}
		if d == root || len(d) <= len(root) {
			return nil
		}
	}
}
