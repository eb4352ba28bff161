package perm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root runs the daemon, and a guest's uid owns its VMM's folder
// (runtime_dir/<app>/vm/): whatever root opens, walks or changes by path
// there, the guest can swap for a symbolic link between root's look and
// root's act. What follows is how root goes through folders it does not
// alone write: one step at a time on descriptors, never following a link
// that a user other than root could have planted, and never stepping from
// a folder a user owns onto something another user owns (systemd's
// "unsafe path transition", src/basic/chase.c).

// ErrUnsafe is the error of a path root refused to follow (see
// UnsafeError).
var ErrUnsafe = errors.New("a user other than root could have planted it")

// UnsafeError is a path root refused to follow, and why.
type UnsafeError struct {
	// Path is the path asked for; At is the step of it refused.
	Path, At string
	// Reason says what At is.
	Reason string
}

func (e *UnsafeError) Error() string {
	at := ""
	if e.At != e.Path {
		at = e.At + " "
	}
	return fmt.Sprintf("refused to open %s: %s%s, and root follows nothing a user other than root could have planted", e.Path, at, e.Reason)
}

func (e *UnsafeError) Unwrap() error { return ErrUnsafe }

// maxLinks bounds the links one Open follows, as the kernel's 40.
const maxLinks = 40

// trusted says whether uid is root's or the caller's own (the daemon run
// by a user without root, as the demo does, trusts its own files).
func trusted(uid uint32) bool { return uid == 0 || uid == uint32(os.Geteuid()) }

// unsafeTransition says whether stepping from a (a folder) to b is unsafe:
// from a folder a user other than root owns, only to what that same user
// owns (systemd's uid_unsafe_transition). Anything else there could be
// something of root's (or another user's) that the folder's owner moved or
// linked in, to be read or changed as root.
func unsafeTransition(a, b *unix.Stat_t) bool { return !trusted(a.Uid) && a.Uid != b.Uid }

// Open opens the absolute path for root without following anything a user
// other than root could have planted. It walks the path from / one step at
// a time, each step opened with O_PATH|O_NOFOLLOW beneath the last:
//   - a symbolic link is followed only when root owns it and the folder
//     that holds it (the host's own, such as /var/run); any other is
//     refused, wherever it is;
//   - a step from a folder a user other than root owns onto something that
//     user does not own is refused (systemd's unsafe path transition);
//
// The last step is opened with flags and O_NOFOLLOW, O_NONBLOCK (a FIFO
// planted there does not block the opener; cleared again after the open),
// O_NOCTTY and O_CLOEXEC, and checked again. With unix.O_PATH, what is
// returned only names what was found (a socket is connected to through
// /proc/self/fd/N, which names that very socket). A refusal is an
// *UnsafeError.
func Open(path string, flags int) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("open %s: not an absolute path", path)
	}
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	defer func() { unix.Close(dir) }()
	var dst unix.Stat_t
	if err := unix.Fstat(dir, &dst); err != nil {
		return nil, &os.PathError{Op: "stat", Path: "/", Err: err}
	}
	at := "/"
	todo := strings.Split(path, "/")
	links := 0
	for {
		for len(todo) > 0 && (todo[0] == "" || todo[0] == ".") {
			todo = todo[1:]
		}
		if len(todo) == 0 {
			// The path ends at a folder (/, or a link's "..").
			return openLast(path, at, dir, ".", &dst, flags)
		}
		name := todo[0]
		todo = todo[1:]
		last := true
		for _, n := range todo {
			last = last && (n == "" || n == ".")
		}
		if name == ".." {
			up, err := unix.Openat(dir, "..", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, &os.PathError{Op: "open", Path: filepath.Dir(at), Err: err}
			}
			var ust unix.Stat_t
			if err := unix.Fstat(up, &ust); err != nil {
				unix.Close(up)
				return nil, &os.PathError{Op: "stat", Path: filepath.Dir(at), Err: err}
			}
			if unsafeTransition(&dst, &ust) {
				unix.Close(up)
				return nil, &UnsafeError{Path: path, At: at, Reason: fmt.Sprintf("is a folder uid %d owns, and a link there leads up out of it", dst.Uid)}
			}
			unix.Close(dir)
			dir, dst, at = up, ust, filepath.Dir(at)
			continue
		}
		at = filepath.Join(at, name)
		child, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
		var cst unix.Stat_t
		if err := unix.Fstat(child, &cst); err != nil {
			unix.Close(child)
			return nil, &os.PathError{Op: "stat", Path: at, Err: err}
		}
		if cst.Mode&unix.S_IFMT == unix.S_IFLNK {
			target, err := followable(path, at, child, &dst, &cst)
			unix.Close(child)
			if err != nil {
				return nil, err
			}
			if links++; links > maxLinks {
				return nil, &os.PathError{Op: "open", Path: path, Err: unix.ELOOP}
			}
			if filepath.IsAbs(target) {
				root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
				if err != nil {
					return nil, &os.PathError{Op: "open", Path: "/", Err: err}
				}
				unix.Close(dir)
				dir, at = root, "/"
				if err := unix.Fstat(dir, &dst); err != nil {
					return nil, &os.PathError{Op: "stat", Path: "/", Err: err}
				}
			} else {
				at = filepath.Dir(at)
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if unsafeTransition(&dst, &cst) {
			unix.Close(child)
			return nil, &UnsafeError{Path: path, At: at, Reason: fmt.Sprintf("is owned by uid %d in a folder uid %d owns (an unsafe path transition: that user could have moved or linked it there)", cst.Uid, dst.Uid)}
		}
		if last {
			if flags&unix.O_PATH != 0 {
				return os.NewFile(uintptr(child), path), nil
			}
			unix.Close(child)
			return openLast(path, at, dir, name, &dst, flags)
		}
		if cst.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(child)
			return nil, &os.PathError{Op: "open", Path: at, Err: unix.ENOTDIR}
		}
		unix.Close(dir)
		dir, dst = child, cst
	}
}

// followable returns the target of the link at (open as fd, stat st, in
// the folder of stat dst) when root may follow it: root (or the caller)
// owns it and its folder.
func followable(path, at string, fd int, dst, st *unix.Stat_t) (string, error) {
	if !trusted(dst.Uid) || !trusted(st.Uid) {
		owner := st.Uid
		if trusted(owner) {
			owner = dst.Uid
		}
		return "", &UnsafeError{Path: path, At: at, Reason: fmt.Sprintf("is a symbolic link that uid %d could have planted", owner)}
	}
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(fd, "", buf)
	if err != nil {
		return "", &os.PathError{Op: "readlink", Path: at, Err: err}
	}
	return string(buf[:n]), nil
}

// openLast opens name in dir (of stat dst), the last step of path, with
// flags, never following a link, and checks what it opened again.
func openLast(path, at string, dir int, name string, dst *unix.Stat_t, flags int) (*os.File, error) {
	if flags&unix.O_PATH != 0 {
		fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	fd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, &UnsafeError{Path: path, At: at, Reason: "became a symbolic link while it was opened"}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: at, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: at, Err: err}
	}
	if name != "." && unsafeTransition(dst, &st) {
		unix.Close(fd)
		return nil, &UnsafeError{Path: path, At: at, Reason: fmt.Sprintf("is owned by uid %d in a folder uid %d owns (an unsafe path transition: that user could have moved or linked it there)", st.Uid, dst.Uid)}
	}
	if flags&unix.O_NONBLOCK == 0 {
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, &os.PathError{Op: "open", Path: at, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// OpenRegular opens the regular file at path for reading as Open does,
// and refuses anything else (a FIFO, a socket, a folder) with a sentence.
func OpenRegular(path string) (*os.File, error) {
	f, err := Open(path, unix.O_RDONLY)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &UnsafeError{Path: path, At: path, Reason: fmt.Sprintf("is a %s, not a regular file", typeName(st.Mode()))}
	}
	return f, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "folder"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// procPath names what descriptor fd refers to; chmod(2) on it changes
// that very inode, as systemd's fchmod_opath does for an O_PATH
// descriptor, which fchmod(2) refuses.
func procPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// Reclaim gives the folder dir, which was lent to a user (a guest's uid),
// and what that user made in it back to root, without following anything
// in it: the folder becomes root's first, so that nothing in it can be
// swapped any more, then each entry lent says is the user's (by its uid
// and gid), through a descriptor. A link the user made is removed, never
// given to root: a root-owned link in a root-owned folder is one Open
// follows, so the user's link would become a path root trusts. Set-id
// bits go, and so do the group's write and others' permissions. A missing
// dir is no error.
func Reclaim(dir string, lent func(uid, gid uint32) bool) error {
	f, err := Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("give %s back to root: %w", dir, err)
	}
	defer f.Close()
	return reclaim(f, dir, lent)
}

func reclaim(dir *os.File, path string, lent func(uid, gid uint32) bool) error {
	dfd := int(dir.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fmt.Errorf("give %s back to root: %w", path, err)
	}
	if st.Uid != 0 || st.Gid != 0 {
		if err := unix.Fchown(dfd, 0, 0); err != nil {
			return fmt.Errorf("give %s back to root: %w", path, err)
		}
	}
	if m := st.Mode & 0o750; m != st.Mode&0o7777 {
		if err := unix.Fchmod(dfd, m); err != nil {
			return fmt.Errorf("give %s back to root: %w", path, err)
		}
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("give %s back to root: %w", path, err)
	}
	var errs []error
	for _, name := range names {
		p := filepath.Join(path, name)
		fd, err := unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("give %s back to root: %w", p, err))
			}
			continue
		}
		err = reclaimEntry(dfd, name, fd, p, lent)
		unix.Close(fd)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// reclaimEntry gives the entry name of the folder dfd, open as fd
// (O_PATH), back to root, as Reclaim says.
func reclaimEntry(dfd int, name string, fd int, p string, lent func(uid, gid uint32) bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("give %s back to root: %w", p, err)
	}
	if !lent(st.Uid, st.Gid) {
		return nil // not the user's: a link to another's file stays theirs
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("give %s back to root: %w", p, err)
		}
		f := os.NewFile(uintptr(sub), p)
		defer f.Close()
		return reclaim(f, p, lent)
	case unix.S_IFLNK:
		// The folder is root's already, so the user cannot swap name
		// between the Fstat and this unlink, which never follows it.
		if err := unix.Unlinkat(dfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove %s, a link the guest left: %w", p, err)
		}
		return nil
	}
	if err := unix.Fchownat(fd, "", 0, 0, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("give %s back to root: %w", p, err)
	}
	if m := st.Mode & 0o750; m != st.Mode&0o7777 {
		if err := unix.Chmod(procPath(fd), m); err != nil {
			return fmt.Errorf("give %s back to root: %w", p, err)
		}
	}
	return nil
}
