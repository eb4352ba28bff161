package volume

import (
	"archive/tar"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUnpackNeverWritesOutsideItsFolder feeds arbitrary bytes to Unpack and
// checks the one property that matters most: whatever it accepts or
// refuses, nothing appears beside the destination folder, and nothing in
// it is a symlink leading out or keeps a set-id bit.
func FuzzUnpackNeverWritesOutsideItsFolder(f *testing.F) {
	t := &testing.T{}
	for _, seed := range [][]byte{
		tarOf(t, shipped...),
		gzipOf(t, tarOf(t, shipped...)),
		tarOf(t, file("../evil", "x", 0o644)),
		tarOf(t, symlink("l", "../../etc"), file("l/passwd", "x", 0o644)),
		tarOf(t, dir("d/"), symlink("d/up", ".."), file("d/up/x", "x", 0o644)),
		tarOf(t, hardlink("h", "/etc/passwd")),
		tarOf(t, entry{name: "dev", typ: tar.TypeChar}),
		zipOf(t, file("a/b", "x", 0o644), symlink("a/c", "/etc")),
		tarOf(t, file("zeros", string(make([]byte, 3*holeChunk+7)), 0o644)),
		gnuSparseTar(t, 1<<20, 300<<10),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, archive []byte) {
		parent := t.TempDir()
		a := filepath.Join(parent, "archive")
		if err := os.WriteFile(a, archive, 0o600); err != nil {
			t.Fatal(err)
		}
		dest := filepath.Join(parent, "dest")
		if err := os.Mkdir(dest, 0o755); err != nil {
			t.Fatal(err)
		}
		_, _ = Unpack(context.Background(), a, dest, UnpackOptions{UID: os.Getuid(), GID: os.Getgid(), Limit: 1 << 20})
		entries, err := os.ReadDir(parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2 {
			t.Fatalf("the parent folder holds %d entries after unpacking; want archive and dest only", len(entries))
		}
		err = filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if info.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s kept a set-id bit", p)
			}
			if info.Mode()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				resolved := filepath.Join(filepath.Dir(p), target)
				if filepath.IsAbs(target) || !strings.HasPrefix(resolved+"/", dest+"/") {
					t.Errorf("%s is a symlink to %s, outside the folder", p, target)
				}
			}
			if !info.IsDir() && !info.Mode().IsRegular() && info.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("%s is a %v", p, info.Mode().Type())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
