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

	"golang.org/x/sys/unix"
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
// anyone is made 0750 or 0640 at most. It returns what it changed.
//
// It goes through descriptors only, as root must where a guest's uid owns
// a folder (runtime_dir/<app>/vm/) and can swap what is in it for a link
// between a look and a change: root itself is opened as Open does, each
// entry with O_PATH|O_NOFOLLOW beneath its folder's descriptor, and modes
// are changed on those descriptors. Symbolic links are left alone; a
// folder neither root nor the caller owns (a guest's vm/, already 0700)
// is neither changed nor entered, and neither is another filesystem mounted below
// root (a tenant's volume a killed daemon left mounted for a checkpoint or
// an export): their files are the tenant's, modes included. A root that
// another user owns is refused with an error.
func Tighten(root string) ([]Tightened, error) {
	f, err := Open(root, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tighten %s: %w", root, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("tighten %s: %w", root, err)
	}
	if !trusted(st.Uid) {
		return nil, fmt.Errorf("tighten %s: it is owned by uid %d, not root, and nibrunnerd neither changes nor enters a folder another user owns (that user could plant links in it); give it to root (chown -R root: %s)", root, st.Uid, root)
	}
	var done []Tightened
	err = tightenDir(f, root, st.Dev, &done)
	return done, err
}

// tightened is mode (a stat's) with others' permissions and the group's
// write taken away; set-id and sticky bits are kept as they were.
func tightened(mode uint32) (was, now fs.FileMode, changed bool) {
	was = fs.FileMode(mode & 0o777)
	now = was &^ (0o007 | 0o020)
	return was, now, now != was
}

// tightenDir tightens the folder open as dir (at path, on device dev) and
// what it holds, as Tighten says.
func tightenDir(dir *os.File, path string, dev uint64, done *[]Tightened) error {
	dfd := int(dir.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fmt.Errorf("tighten %s: %w", path, err)
	}
	if was, now, ok := tightened(st.Mode); ok {
		if err := unix.Fchmod(dfd, st.Mode&0o7000|uint32(now)); err != nil {
			return fmt.Errorf("tighten %s: %w", path, err)
		}
		*done = append(*done, Tightened{Path: path, Was: was, Now: now})
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("tighten %s: %w", path, err)
	}
	for _, name := range names {
		p := filepath.Join(path, name)
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // gone while we looked
		}
		if err != nil {
			return fmt.Errorf("tighten %s: %w", p, err)
		}
		err = tightenEntry(fd, p, dev, done)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

// tightenEntry tightens the entry open as fd (O_PATH, not followed).
func tightenEntry(fd int, p string, dev uint64, done *[]Tightened) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("tighten %s: %w", p, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil
	case unix.S_IFDIR:
		if !trusted(st.Uid) || st.Dev != dev {
			return nil
		}
		sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("tighten %s: %w", p, err)
		}
		f := os.NewFile(uintptr(sub), p)
		defer f.Close()
		return tightenDir(f, p, dev, done)
	}
	if was, now, ok := tightened(st.Mode); ok {
		if err := unix.Chmod(procPath(fd), st.Mode&0o7000|uint32(now)); err != nil {
			return fmt.Errorf("tighten %s: %w", p, err)
		}
		*done = append(*done, Tightened{Path: p, Was: was, Now: now})
	}
	return nil
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
