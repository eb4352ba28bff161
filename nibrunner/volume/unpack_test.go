package volume

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
)

// entry is one crafted archive member.
type entry struct {
	name, body, link string
	typ              byte        // tar type; zip uses 0 (file), '5' (dir), '2' (symlink)
	mode             fs.FileMode // permission and set-id bits
}

func file(name, body string, mode fs.FileMode) entry {
	return entry{name: name, body: body, typ: tar.TypeReg, mode: mode}
}
func dir(name string) entry { return entry{name: name, typ: tar.TypeDir, mode: 0o755} }
func symlink(name, to string) entry {
	return entry{name: name, link: to, typ: tar.TypeSymlink, mode: 0o777}
}
func hardlink(name, to string) entry {
	return entry{name: name, link: to, typ: tar.TypeLink, mode: 0o644}
}

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		mode := int64(e.mode.Perm())
		if e.mode&fs.ModeSetuid != 0 {
			mode |= 0o4000
		}
		if e.mode&fs.ModeSetgid != 0 {
			mode |= 0o2000
		}
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: mode, Linkname: e.link, Size: int64(len(e.body)), ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipOf(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		switch e.typ {
		case tar.TypeDir:
			h.SetMode(fs.ModeDir | 0o755)
		case tar.TypeSymlink:
			h.SetMode(fs.ModeSymlink | 0o777)
		case tar.TypeChar:
			h.SetMode(fs.ModeDevice | fs.ModeCharDevice | 0o600)
		default:
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		body := e.body
		if e.typ == tar.TypeSymlink {
			body = e.link
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// want describes one path in the unpacked tree.
type want struct {
	mode fs.FileMode // type and permission bits as os.Lstat reports them
	body string      // regular files
	link string      // symlinks
}

func unpackBytes(t *testing.T, archive []byte, limit int64) (string, UnpackStats, error) {
	t.Helper()
	dir := t.TempDir()
	a := filepath.Join(dir, "archive")
	if err := os.WriteFile(a, archive, 0o600); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(dir, "dest")
	if err := os.Mkdir(dest, 0o755); err != nil {
		t.Fatal(err)
	}
	stats, err := Unpack(context.Background(), a, dest, UnpackOptions{UID: 65534, GID: 65534, Limit: limit})
	return dest, stats, err
}

func checkTree(t *testing.T, dest string, wanted map[string]want) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(dest, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dest, p)
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 65534 || sys.Gid != 65534 {
			t.Errorf("%s is owned by %d:%d, want 65534:65534", rel, sys.Uid, sys.Gid)
		}
		if rel == "." {
			return nil
		}
		seen[rel] = true
		w, ok := wanted[rel]
		if !ok {
			t.Errorf("unexpected %s (%v)", rel, st.Mode())
			return nil
		}
		if st.Mode() != w.mode {
			t.Errorf("%s has mode %v, want %v", rel, st.Mode(), w.mode)
		}
		switch {
		case st.Mode().IsRegular():
			if b, _ := os.ReadFile(p); string(b) != w.body {
				t.Errorf("%s holds %q, want %q", rel, b, w.body)
			}
		case st.Mode()&fs.ModeSymlink != 0:
			if l, _ := os.Readlink(p); l != w.link {
				t.Errorf("%s points to %q, want %q", rel, l, w.link)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for p := range wanted {
		if !seen[p] {
			t.Errorf("%s is missing", p)
		}
	}
}

var shipped = []entry{
	dir("site/"),
	file("site/index.html", "<h1>hi</h1>", 0o644),
	file("site/bin/run", "#!/bin/sh", fs.ModeSetuid|fs.ModeSetgid|0o755),
	file("./site/conf/app.toml", "port = 3000", 0o600),
	symlink("site/current", "index.html"),
	symlink("site/conf/up", "../index.html"),
	hardlink("site/copy.html", "site/index.html"),
	file(".DS_Store", "junk", 0o644),
	file("__MACOSX/site/._index.html", "junk", 0o644),
	file("site/._index.html", "junk", 0o644),
	file("site/.index.html.swp", "junk", 0o644),
	file("site/index.html~", "junk", 0o644),
	file("site/Thumbs.db", "junk", 0o644),
}

var shippedTree = map[string]want{
	"site":               {mode: fs.ModeDir | 0o755},
	"site/index.html":    {mode: 0o644, body: "<h1>hi</h1>"},
	"site/bin":           {mode: fs.ModeDir | 0o755},
	"site/bin/run":       {mode: 0o755, body: "#!/bin/sh"},
	"site/conf":          {mode: fs.ModeDir | 0o755},
	"site/conf/app.toml": {mode: 0o600, body: "port = 3000"},
	"site/current":       {mode: fs.ModeSymlink | 0o777, link: "index.html"},
	"site/conf/up":       {mode: fs.ModeSymlink | 0o777, link: "../index.html"},
	"site/copy.html":     {mode: 0o644, body: "<h1>hi</h1>"},
}

func TestATarTarGzOrZipUnpacksOwnedByTheTenantWithoutSetIDBitsOrJunk(t *testing.T) {
	testenv.RequireRoot(t)
	zipTree := map[string]want{
		"site":               {mode: fs.ModeDir | 0o755},
		"site/index.html":    {mode: 0o644, body: "<h1>hi</h1>"},
		"site/bin":           {mode: fs.ModeDir | 0o755},
		"site/bin/run":       {mode: 0o755, body: "#!/bin/sh"},
		"site/conf":          {mode: fs.ModeDir | 0o755},
		"site/conf/app.toml": {mode: 0o600, body: "port = 3000"},
	}
	var zipEntries []entry
	for _, e := range shipped {
		if e.typ == tar.TypeReg || e.typ == tar.TypeDir {
			zipEntries = append(zipEntries, e)
		}
	}
	cases := []struct {
		name    string
		archive []byte
		format  ArchiveFormat
		tree    map[string]want
		skipped int
	}{
		{"tar", tarOf(t, shipped...), Tar, shippedTree, 6},
		{"tar.gz", gzipOf(t, tarOf(t, shipped...)), TarGz, shippedTree, 6},
		{"zip", zipOf(t, zipEntries...), Zip, zipTree, 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dest, stats, err := unpackBytes(t, c.archive, 0)
			if err != nil {
				t.Fatal(err)
			}
			if stats.Format != c.format || stats.Skipped != c.skipped {
				t.Errorf("stats = %+v; want format %s, %d skipped", stats, c.format, c.skipped)
			}
			checkTree(t, dest, c.tree)
		})
	}
}

func TestAnArchiveThatWouldLeaveItsFolderOrCarriesSpecialFilesIsRefused(t *testing.T) {
	cases := []struct {
		name, wantErr string
		archive       func(t *testing.T) []byte
	}{
		{"dot-dot entry", `"../evil" climbs out of the folder`, func(t *testing.T) []byte { return tarOf(t, file("../evil", "x", 0o644)) }},
		{"dot-dot inside a path", `"a/../../evil" climbs out`, func(t *testing.T) []byte { return tarOf(t, file("a/../../evil", "x", 0o644)) }},
		{"absolute entry", `"/etc/cron.d/evil" has an absolute name`, func(t *testing.T) []byte { return tarOf(t, file("/etc/cron.d/evil", "x", 0o644)) }},
		{"symlink climbing out", `symlink to "../../etc", which climbs out`, func(t *testing.T) []byte { return tarOf(t, symlink("l", "../../etc")) }},
		{"symlink climbing out from a subfolder", `climbs out`, func(t *testing.T) []byte { return tarOf(t, symlink("a/b/l", "../../../x")) }},
		{"absolute symlink", `symlink to "/etc", outside the folder`, func(t *testing.T) []byte { return tarOf(t, symlink("etc", "/etc")) }},
		{"symlink then a write through it", `climbs out`, func(t *testing.T) []byte {
			return tarOf(t, symlink("l", "sub/../.."), file("l/passwd", "x", 0o644))
		}},
		{"zip with a symlink", `"site/current" is a symlink, and a zip may not carry one`, func(t *testing.T) []byte {
			return zipOf(t, file("site/index.html", "x", 0o644), symlink("site/current", "index.html"))
		}},
		{"hard link outside", `hard link to "/etc/shadow"`, func(t *testing.T) []byte { return tarOf(t, hardlink("h", "/etc/shadow")) }},
		{"hard link to nothing earlier", `hard link to "later"`, func(t *testing.T) []byte {
			return tarOf(t, hardlink("h", "later"), file("later", "x", 0o644))
		}},
		{"hard link climbing out", `hard link to "../x"`, func(t *testing.T) []byte { return tarOf(t, hardlink("h", "../x")) }},
		{"character device", `"null" is a device node`, func(t *testing.T) []byte { return tarOf(t, entry{name: "null", typ: tar.TypeChar}) }},
		{"block device", `"sda" is a device node`, func(t *testing.T) []byte { return tarOf(t, entry{name: "sda", typ: tar.TypeBlock}) }},
		{"fifo", `"pipe" is a FIFO`, func(t *testing.T) []byte { return tarOf(t, entry{name: "pipe", typ: tar.TypeFifo}) }},
		{"zip device", `"null" is a device node`, func(t *testing.T) []byte { return zipOf(t, entry{name: "null", typ: tar.TypeChar}) }},
		{"zip backslash", `backslash`, func(t *testing.T) []byte { return zipOf(t, file(`..\..\evil`, "x", 0o644)) }},
		{"not an archive", `not a tar, tar.gz or zip: found 68656c6c`, func(t *testing.T) []byte { return []byte("hello, world") }},
		{"xz", `xz-compressed`, func(t *testing.T) []byte { return []byte("\xfd7zXZ\x00rest") }},
		{"gzip of not a tar", `read the archive`, func(t *testing.T) []byte { return gzipOf(t, []byte("plain text, not a tar")) }},
		{"empty tar", `not a tar, tar.gz or zip: found 00000000`, func(t *testing.T) []byte { return tarOf(t) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outside := t.TempDir()
			dest, _, err := unpackBytes(t, c.archive(t), 0)
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("error = %v; want it to say %s", err, c.wantErr)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Fatalf("something was written outside: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "evil")); err == nil {
				t.Fatal("an entry landed beside the destination")
			}
		})
	}
}

func TestASymlinkInsideTheFolderIsFollowedOnlyInsideIt(t *testing.T) {
	testenv.RequireRoot(t)
	dest, _, err := unpackBytes(t, tarOf(t, dir("data/"), symlink("here", "data"), file("here/f", "x", 0o644)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dest, "data/f")); err != nil || string(b) != "x" {
		t.Fatalf("data/f = %q, %v", b, err)
	}
}

func TestALaterEntryReplacesAnEarlierSymlinkInsteadOfWritingThroughIt(t *testing.T) {
	testenv.RequireRoot(t)
	dest, _, err := unpackBytes(t, tarOf(t, file("target", "original", 0o644), symlink("name", "target"), file("name", "replacement", 0o644)), 0)
	if err != nil {
		t.Fatal(err)
	}
	checkTree(t, dest, map[string]want{
		"target": {mode: 0o644, body: "original"},
		"name":   {mode: 0o644, body: "replacement"},
	})
}

func TestAnArchiveLargerThanItsLimitStopsEarlyAsDoesNotFit(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	for name, archive := range map[string][]byte{
		"tar": tarOf(t, file("a", big, 0o644), file("b", big, 0o644)),
		"zip": zipOf(t, file("a", big, 0o644), file("b", big, 0o644)),
	} {
		t.Run(name, func(t *testing.T) {
			_, stats, err := unpackBytes(t, archive, 1<<20+512<<10)
			if !errors.Is(err, ErrDoesNotFit) {
				t.Fatalf("error = %v; want ErrDoesNotFit", err)
			}
			if stats.Bytes > 1<<20 {
				t.Fatalf("wrote %d bytes before stopping", stats.Bytes)
			}
		})
	}
}

func TestArchiverJunkIsRecognisedByName(t *testing.T) {
	for name, junk := range map[string]bool{
		".DS_Store": true, "__MACOSX": true, "Thumbs.db": true, "._icon": true, ".main.go.swp": true,
		".x.swo": true, "notes~": true, ".#lock": true, "main.go": false, ".env": false, "swp": false, ".swp": false,
		"a.swp": false, "~notes": false,
	} {
		if got := isJunk(name); got != junk {
			t.Errorf("isJunk(%q) = %v, want %v", name, got, junk)
		}
	}
}
