package export

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/volume"
)

// Marker is the comment of the pax global header every export begins
// with. An archive that carries it is an export: used as a volume's
// initialContents, its data/ entries land at destinationPath with the
// prefix removed and its .env is left out (nibrunner/volume).
const Marker = volume.ExportMarker

// DataDir is the folder of the archive that holds the volume's files, and
// EnvFile the file that holds the app's environment.
const (
	DataDir = "data"
	EnvFile = ".env"
)

// Stats counts what an archive holds.
type Stats struct {
	Files, Dirs, Links int
	// Skipped counts overlay whiteouts, devices, FIFOs and sockets: a
	// volume's upper layer marks deleted lower files with character
	// devices, which are not the app's files.
	Skipped int
	Bytes   int64
}

// WriteTar writes the tar of an export to w: the pax marker, then the tree
// at root under data/ (owners, modes, mtimes, symlinks and hard links as
// they are; a file with holes as a GNU sparse 1.0 entry holding only its
// data), then env as .env unless env is nil. Stats.Bytes counts the file
// bytes stored, holes left out.
func WriteTar(ctx context.Context, w io.Writer, root string, env desired.TenantEnvironment) (Stats, error) {
	var st Stats
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": Marker}, Format: tar.FormatPAX}); err != nil {
		return st, err
	}
	links := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := DataDir
		if rel != "." {
			name = path.Join(DataDir, filepath.ToSlash(rel))
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		m := info.Mode()
		if !m.IsRegular() && !m.IsDir() && m&fs.ModeSymlink == 0 {
			st.Skipped++
			return nil
		}
		target := ""
		if m&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, target)
		if err != nil {
			return err
		}
		h.Name, h.Uname, h.Gname, h.Format = name, "", "", tar.FormatPAX
		if m.IsDir() {
			h.Name += "/"
		}
		sys, _ := info.Sys().(*syscall.Stat_t)
		if sys != nil {
			h.Uid, h.Gid = int(sys.Uid), int(sys.Gid)
			if m.IsRegular() && sys.Nlink > 1 {
				id := [2]uint64{sys.Dev, sys.Ino}
				if first, ok := links[id]; ok {
					h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
				} else {
					links[id] = name
				}
			}
		}
		if h.Typeflag == tar.TypeReg {
			n, err := writeFile(tw, w, h, p)
			if err != nil {
				return err
			}
			st.Files++
			st.Bytes += n
			return nil
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if m.IsDir() {
			st.Dirs++
		} else {
			st.Links++
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("archive the volume: %w", err)
	}
	if env != nil {
		b := []byte(DotEnv(env))
		h := &tar.Header{Typeflag: tar.TypeReg, Name: EnvFile, Mode: 0o600, Size: int64(len(b)), ModTime: time.Now().Truncate(time.Second), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return st, err
		}
		if _, err := tw.Write(b); err != nil {
			return st, err
		}
	}
	return st, tw.Close()
}

// writeFile writes the regular file at p, whose header is h, and returns
// the bytes of data it stored: a file with holes as a sparse entry (only
// its data runs, see sparse.go), any other as a plain one.
func writeFile(tw *tar.Writer, w io.Writer, h *tar.Header, p string) (int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var m []extent
	if h.Size > 0 {
		runs, err := dataRuns(f, h.Size)
		if err != nil {
			return 0, err
		}
		m = sparseMap(runs, h.Size)
	}
	if m != nil {
		if err := tw.Flush(); err != nil {
			return 0, err
		}
		return writeSparse(w, h, f, m)
	}
	if err := tw.WriteHeader(h); err != nil {
		return 0, err
	}
	return io.Copy(tw, f)
}

// DotEnv renders env as a .env file: one NAME=value line per variable in
// name order, the value bare when it holds only [A-Za-z0-9_./:@%+,-] and
// single-quoted otherwise (a ' inside written '\”), so a POSIX shell's
// `set -a; . ./.env` gives back every value byte for byte.
func DotEnv(env desired.TenantEnvironment) string {
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		v := string(env[k])
		b.WriteString(k)
		b.WriteByte('=')
		if v != "" && strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:@%+,-") == "" {
			b.WriteString(v)
		} else {
			b.WriteString("'" + strings.ReplaceAll(v, "'", `'\''`) + "'")
		}
		b.WriteByte('\n')
	}
	return b.String()
}
