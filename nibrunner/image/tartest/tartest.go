// Package tartest builds the tar layers the image and flatten tests apply,
// and the daemon's tests push.
package tartest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Entry is one tar entry.
type Entry struct {
	Name, Body, Link string
	Type             byte
	Mode             int64
	UID, GID         int
	// Zeros follow Body in a file, for a large entry without a large literal.
	Zeros int64
}

// Dir is a folder, mode 0755.
func Dir(name string) Entry { return Entry{Name: name, Type: tar.TypeDir, Mode: 0o755} }

// File is a regular file, mode 0644.
func File(name, body string) Entry {
	return Entry{Name: name, Body: body, Type: tar.TypeReg, Mode: 0o644}
}

// Program is an executable file, mode 0755.
func Program(name, body string) Entry {
	return Entry{Name: name, Body: body, Type: tar.TypeReg, Mode: 0o755}
}

// Busybox is the host's static busybox at bin/busybox, each of its
// applets a link beside it: a shell and tools for an image a real guest
// runs.
func Busybox(t testing.TB) []Entry {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	list, err := exec.Command(bb, "--list").Output()
	if err != nil {
		t.Fatalf("busybox --list: %v", err)
	}
	es := []Entry{Dir("bin/"), Program("bin/busybox", string(b))}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			es = append(es, Symlink("bin/"+applet, "busybox"))
		}
	}
	return es
}

// Symlink is a symbolic link to target.
func Symlink(name, target string) Entry {
	return Entry{Name: name, Link: target, Type: tar.TypeSymlink, Mode: 0o777}
}

// Hardlink is a hard link to the entry named target.
func Hardlink(name, target string) Entry {
	return Entry{Name: name, Link: target, Type: tar.TypeLink, Mode: 0o644}
}

// Device is a device node, 1:3 (/dev/null's numbers).
func Device(name string, typ byte) Entry {
	return Entry{Name: name, Type: typ, Mode: 0o600}
}

// Tar is an uncompressed tar (PAX) of the entries.
func Tar(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Uid: e.UID, Gid: e.GID, Linkname: e.Link, Format: tar.FormatPAX}
		if e.Type == tar.TypeReg {
			hdr.Size = int64(len(e.Body)) + e.Zeros
		}
		if e.Type == tar.TypeChar || e.Type == tar.TypeBlock {
			hdr.Devmajor, hdr.Devminor = 1, 3
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.Type == tar.TypeReg {
			if _, err := tw.Write([]byte(e.Body)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.CopyN(tw, Zeros{}, e.Zeros); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Layer is an image layer holding the entries (gzip, as tarball
// compresses a tar it is given).
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	raw := Tar(t, entries...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Zeros is an endless stream of zero bytes.
type Zeros struct{}

func (Zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// Ls is a folder's entries' names, sorted, joined by commas.
func Ls(t testing.TB, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return strings.Join(n, ",")
}
