package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"alpnib.dev/nibrunner/control"
)

func newCpCmd() *cobra.Command {
	var f daemonFlags
	cmd := &cobra.Command{
		Use:   "cp SRC DEST",
		Short: "Copy files out of an app's guest or into it, as kubectl cp does",
		Long: `cp copies a file or a directory tree between this host and an app's running
guest, streaming a tar as kubectl cp and docker cp do. One side is
APP:PATH, PATH absolute in the app's root:

  nibrunnerd cp APP:/var/log/app.log ./app.log    out of the guest
  nibrunnerd cp ./config.json APP:/etc/app/       into /etc/app/config.json
  nibrunnerd cp ./conf APP:/etc/app/conf          a tree, named as given

A DEST that is an existing directory here, or an APP:PATH that ends in /,
receives the copy under the source's own name. Modes and symbolic links
are kept, and owners on a copy out; nothing outside the app's root can be
reached, and a copy out never writes through a link the archive made.

The guest runs the app's own tar (found in the PATH of the app's
environment, else /bin:/usr/bin) as the app's user, 65534, as the app
itself runs: it reads and writes what the app can, and what it copies in
is the app's. The app's root must have a tar, as kubectl cp needs one in
the container; docs/debugging.md shows how to add one as a layer. Each cp
is an event (nibrunnerd events).` + askLong,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseCopyArg(args[0]), parseCopyArg(args[1])
			switch {
			case src.app != "" && dst.app != "":
				return errors.New("cp copies between this host and one app: make SRC or DEST a local path")
			case src.app == "" && dst.app == "":
				return errors.New("cp needs one side as APP:PATH (the app's name, a colon and an absolute path in its root)")
			}
			c, err := f.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if src.app != "" {
				return copyOut(ctx, c, src, dst.path, cmd.ErrOrStderr())
			}
			return copyIn(ctx, c, src.path, dst)
		},
	}
	f.register(cmd, false)
	return cmd
}

// copyArg is one side of a cp: a local path, or APP:PATH.
type copyArg struct{ app, path string }

// parseCopyArg reads APP:PATH; a path with a slash before its first colon,
// or that starts with a dot, is local (./a:b), as kubectl's rule has it.
func parseCopyArg(v string) copyArg {
	app, p, ok := strings.Cut(v, ":")
	if !ok || app == "" || strings.ContainsRune(app, '/') || strings.HasPrefix(app, ".") {
		return copyArg{path: v}
	}
	return copyArg{app: app, path: p}
}

func remotePath(a copyArg) (string, error) {
	if !path.IsAbs(a.path) {
		return "", fmt.Errorf("%s:%s: give the path in the app's root as an absolute one (%s:/%s)", a.app, a.path, a.app, a.path)
	}
	return a.path, nil
}

// copyOut streams a tar of src out of the guest and unpacks it at dst.
func copyOut(ctx context.Context, c *control.Client, src copyArg, dst string, errOut io.Writer) error {
	p, err := remotePath(src)
	if err != nil {
		return err
	}
	p = path.Clean(p)
	if p == "/" {
		return fmt.Errorf("%s:/: copy a file or directory under the root, not the root itself", src.app)
	}
	dir, base := path.Split(p)
	target := dst
	if fi, err := os.Stat(dst); err == nil && fi.IsDir() {
		target = filepath.Join(dst, base)
	}
	conn, err := c.Exec(ctx, src.app, control.ExecRequest{Argv: []string{"tar", "-cf", "-", "-C", dir, "--", base}, UID: nobody, GID: nobody, Copy: "out"})
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		err := extractTar(pr, target, base)
		if err == nil {
			// tar pads its archive past the end marker the reader stops
			// at; left unread, the padding would block the session.
			_, err = io.Copy(io.Discard, pr)
		}
		// A failed extraction fails the next write, which ends the session.
		pr.CloseWithError(err)
		done <- err
	}()
	exit, err := control.RunExec(ctx, conn, control.ExecIO{Stdout: pw, Stderr: &limited{w: &stderr, n: 8 << 10}})
	pw.CloseWithError(err)
	xerr := <-done
	switch {
	case xerr != nil && err != nil:
		// The extraction failed first and stopped the stream.
		return fmt.Errorf("cp %s:%s to %s: %w", src.app, p, dst, xerr)
	case err != nil:
		return fmt.Errorf("cp %s:%s: %w", src.app, p, err)
	case exit.Code != 0:
		return fmt.Errorf("cp %s:%s: the guest's tar exited %d: %s", src.app, p, exit.Code, guestSaid(exit.Error, stderr.String()))
	case xerr != nil:
		return fmt.Errorf("cp %s:%s to %s: %w", src.app, p, dst, xerr)
	}
	return nil
}

// copyIn streams a tar of the local src into the guest at dst.
func copyIn(ctx context.Context, c *control.Client, src string, dst copyArg) error {
	p, err := remotePath(dst)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("cp %s: %w", src, err)
	}
	dir, base := path.Split(path.Clean(p))
	if strings.HasSuffix(p, "/") || p == "/" {
		dir, base = path.Clean(p), filepath.Base(filepath.Clean(src))
	}
	conn, err := c.Exec(ctx, dst.app, control.ExecRequest{Argv: []string{"tar", "-xf", "-", "-C", dir}, UID: nobody, GID: nobody, Stdin: true, Copy: "in"})
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, src, base)) }()
	var out bytes.Buffer
	exit, err := control.RunExec(ctx, conn, control.ExecIO{Stdin: pr, Stdout: &limited{w: &out, n: 8 << 10}, Stderr: &limited{w: &out, n: 8 << 10}})
	pr.Close()
	switch {
	case err != nil:
		return fmt.Errorf("cp %s to %s:%s: %w", src, dst.app, p, err)
	case exit.Code != 0:
		return fmt.Errorf("cp %s to %s:%s: the guest's tar exited %d: %s", src, dst.app, p, exit.Code, guestSaid(exit.Error, out.String()))
	}
	return nil
}

func guestSaid(why, out string) string {
	s := strings.TrimSpace(why + "\n" + out)
	if s == "" {
		return "it said nothing"
	}
	return s
}

// limited keeps the first n bytes written to it and drops the rest.
type limited struct {
	w io.Writer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	k := min(len(p), l.n)
	if k > 0 {
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// writeTar writes src (a file, link or tree, not followed) as a tar whose
// names begin with base, keeping numeric owners and modes.
func writeTar(w io.Writer, src, base string) error {
	tw := tar.NewWriter(w)
	src = filepath.Clean(src)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		h.Name = path.Join(base, filepath.ToSlash(rel))
		if fi.IsDir() {
			h.Name += "/"
		}
		// Numeric owners: the host's names mean nothing in the app's root.
		h.Uname, h.Gname = "", ""
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			if _, err := io.Copy(tw, f); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// extractTar unpacks a tar whose names begin with base at target (base
// itself becomes target). A name outside base, a path through a symbolic
// link, or a hard link outside target is refused: a guest cannot make the
// copy write anywhere but target. Owners are kept when this runs as root.
func extractTar(r io.Reader, target, base string) error {
	tr := tar.NewReader(r)
	target = filepath.Clean(target)
	root := os.Geteuid() == 0
	type dirTime struct {
		p string
		t time.Time
	}
	var dirs []dirTime
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the guest's tar: %w", err)
		}
		dst, err := within(target, base, h.Name)
		if err != nil {
			return err
		}
		if err := noLinkOnTheWay(target, dst); err != nil {
			return err
		}
		mode := fs.FileMode(h.Mode) & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if fi, err := os.Lstat(dst); err != nil || !fi.IsDir() {
				return fmt.Errorf("%s: is there and is not a directory", dst)
			}
			dirs = append(dirs, dirTime{dst, h.ModTime})
		case tar.TypeReg:
			os.Remove(dst)
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%s: %w", dst, err)
			}
		case tar.TypeSymlink:
			os.Remove(dst)
			if err := os.Symlink(h.Linkname, dst); err != nil {
				return err
			}
		case tar.TypeLink:
			old, err := within(target, base, h.Linkname)
			if err != nil {
				return err
			}
			if err := noLinkOnTheWay(target, old); err != nil {
				return err
			}
			os.Remove(dst)
			if err := os.Link(old, dst); err != nil {
				return err
			}
		default:
			continue // devices and fifos stay in the guest
		}
		if root {
			if err := os.Lchown(dst, h.Uid, h.Gid); err != nil {
				return err
			}
		}
		if h.Typeflag != tar.TypeSymlink {
			if err := os.Chmod(dst, mode); err != nil {
				return err
			}
			if h.Typeflag != tar.TypeDir {
				_ = os.Chtimes(dst, h.ModTime, h.ModTime)
			}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		_ = os.Chtimes(dirs[i].p, dirs[i].t, dirs[i].t)
	}
	return nil
}

// within maps an archive name under base to its place under target;
// "..", resolved, may not leave base.
func within(target, base, name string) (string, error) {
	n := strings.TrimPrefix(path.Clean("/"+name), "/")
	rel, ok := strings.CutPrefix(n, base)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return "", fmt.Errorf("the guest's tar holds %q, which is not under %s: refused", name, base)
	}
	return target + filepath.FromSlash(rel), nil
}

// noLinkOnTheWay refuses a dst below target when target or a directory
// between them is a symbolic link (one the archive may have made a moment
// before).
func noLinkOnTheWay(target, dst string) error {
	rel, err := filepath.Rel(target, dst)
	if err != nil || rel == "." {
		return err
	}
	p := target
	parts := strings.Split(rel, string(filepath.Separator))
	for i := 0; i < len(parts); i++ {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("the copy would write through the link %s: refused", p)
		}
		p = filepath.Join(p, parts[i])
	}
	return nil
}
