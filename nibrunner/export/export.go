// Package export writes an app's volume out as a gzipped tar in the
// exports store: the volume's files (the app's root as it wrote it) under
// data/, with owners, modes, mtimes, symlinks and hard links kept, and the
// app's environment as .env when the document states it.
//
// The data comes from a checkpoint, not from the live file: the volume is
// copied sparsely (the guest's filesystem frozen for the copy when one has
// it mounted), the copy is mounted read-only on a loop device, and the tar
// is streamed from it through gzip straight into a multipart upload, so
// nothing but the copy itself is staged on disk. The copy, its mount and
// its loop device are removed in every outcome.
package export

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/store"
)

// Info is an export that was written.
type Info struct {
	// SizeBytes is the object's size: the gzipped tar.
	SizeBytes uint64
	ReadyAt   time.Time
	Key       string `json:",omitempty"`
}

// Options configure a Writer.
type Options struct {
	// Objects is the exports store (exports.store_url).
	Objects store.Streamer
	// StagingDir holds the checkpoint copy and its mount while an export
	// is written, and a note per export in flight (so a restarted daemon
	// aborts the upload a dead one left).
	StagingDir string
	// RecordDir holds one record per export written.
	RecordDir string
	// FreezeTimeout bounds the freeze (checkpoint.DefaultFreezeTimeout).
	FreezeTimeout time.Duration
}

// Writer writes exports.
type Writer struct {
	opt Options
}

// Open returns the Writer, first cleaning up after a daemon that died
// writing exports: each upload it had in flight is aborted (nothing stays
// at the key half-written), and its staging files are removed.
func Open(ctx context.Context, opt Options) (*Writer, error) {
	if opt.Objects == nil || opt.StagingDir == "" || opt.RecordDir == "" {
		return nil, errors.New("exports: a store, a staging folder and a record folder are required")
	}
	for _, d := range []string{opt.StagingDir, opt.RecordDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("exports: %w", err)
		}
	}
	w := &Writer{opt: opt}
	notes, _ := filepath.Glob(filepath.Join(opt.StagingDir, "*.uploading"))
	for _, n := range notes {
		key, err := os.ReadFile(n)
		if err == nil && len(key) > 0 {
			if _, err := opt.Objects.AbortIncompleteAt(ctx, string(key)); err != nil {
				return nil, fmt.Errorf("exports: abort the upload a stopped daemon left at %q: %w", key, err)
			}
		}
	}
	// Nobody else writes here: whatever is left is a dead daemon's.
	left, _ := os.ReadDir(opt.StagingDir)
	for _, e := range left {
		if base, ok := strings.CutSuffix(e.Name(), ".img"); ok {
			w.cleanStaging(base)
		}
	}
	for _, n := range notes {
		os.Remove(n)
	}
	return w, nil
}

// List returns the exports written, by id.
func (w *Writer) List(ctx context.Context) (map[string]Info, error) {
	return atomicfile.ReadRecords[Info](w.opt.RecordDir, "exports")
}

// Forget drops export id's record; the object stays where it was written.
func (w *Writer) Forget(ctx context.Context, id string) error {
	if err := os.Remove(filepath.Join(w.opt.RecordDir, id+".json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("forget export %s: %w", id, err)
	}
	return nil
}

// An export in flight stages under a base name of its own, <id>-<random>:
// the copy (.img), its mount (.mnt) and a note of the key it uploads to
// (.uploading). A run that was cancelled may still be cleaning up while
// the next one of the same export starts.
func (w *Writer) image(base string) string { return filepath.Join(w.opt.StagingDir, base+".img") }
func (w *Writer) mount(base string) string { return filepath.Join(w.opt.StagingDir, base+".mnt") }
func (w *Writer) note(base string) string  { return filepath.Join(w.opt.StagingDir, base+".uploading") }

// cleanStaging unmounts and removes the staging files of base and frees
// the loop device its copy is attached to.
func (w *Writer) cleanStaging(base string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mnt, img := w.mount(base), w.image(base)
	if _, err := os.Stat(mnt); err == nil {
		_, _ = run(ctx, "umount", mnt)
		os.Remove(mnt)
	}
	if _, err := os.Stat(img); err == nil {
		if out, err := run(ctx, "losetup", "--noheadings", "--output", "NAME", "--associated", img); err == nil {
			for _, dev := range strings.Fields(out) {
				_, _ = run(ctx, "losetup", "--detach", dev)
			}
		}
		os.Remove(img)
	}
}

// run runs a host tool and returns its trimmed output; an error carries it.
func run(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		return s, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, s)
	}
	return s, nil
}

// Write writes export e of vol and records it, once its staging files are
// gone.
func (w *Writer) Write(ctx context.Context, e desired.DesiredExport, vol checkpoint.Volume) (Info, error) {
	id, key := string(e.ExportId), string(e.ObjectKey)
	n, err := w.upload(ctx, e, vol)
	if err != nil {
		return Info{}, fmt.Errorf("export %s: %w", id, err)
	}
	info := Info{SizeBytes: uint64(n), ReadyAt: time.Now().UTC(), Key: key}
	b, _ := json.Marshal(info)
	if err := atomicfile.WriteFile(filepath.Join(w.opt.RecordDir, id+".json"), b, 0o600); err != nil {
		return Info{}, fmt.Errorf("export %s: record it: %w", id, err)
	}
	return info, nil
}

// mountOptions are how an export mounts the copy of a tenant's volume
// (ext4(5): noload skips loading the journal).
const mountOptions = "ro,noload,nosuid,nodev,noexec"

// upload stages a copy of vol, streams the archive of e from it to the
// store and removes what it staged; it returns the object's size.
func (w *Writer) upload(ctx context.Context, e desired.DesiredExport, vol checkpoint.Volume) (int64, error) {
	id, key := string(e.ExportId), string(e.ObjectKey)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	base := id + "-" + hex.EncodeToString(rnd[:])
	// The note first: a daemon killed at any point after it leaves what
	// the next one needs to abort the upload and clean the staging.
	if err := atomicfile.WriteFile(w.note(base), []byte(key), 0o600); err != nil {
		return 0, err
	}
	defer os.Remove(w.note(base))
	defer w.cleanStaging(base)
	if _, err := checkpoint.Snapshot(ctx, vol, w.image(base), w.opt.FreezeTimeout); err != nil {
		return 0, err
	}
	mnt := w.mount(base)
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return 0, err
	}
	// The filesystem is the tenant's, written by a guest that may have had
	// root: the host kernel reads it as little as it can. noload: ext4
	// replays no journal (a volume frozen for the copy, or shut down
	// cleanly, has none to replay; a guest that crashed leaves its last
	// transactions there, and the export is of the files without them),
	// and the loop device is read-only, so nothing writes; nosuid,
	// nodev, noexec: nothing on it is a device, a privilege or a program
	// here.
	dev, err := run(ctx, "losetup", "--find", "--show", "--read-only", w.image(base))
	if err != nil {
		return 0, fmt.Errorf("attach the copy of volume %s to a loop device: %w", vol.ID, err)
	}
	if _, err := run(ctx, "mount", "-t", "ext4", "-o", mountOptions, dev, mnt); err != nil {
		return 0, fmt.Errorf("mount the copy of volume %s read-only: %w", vol.ID, err)
	}
	root := filepath.Join(mnt, guest.VolumeUpperDir)
	if _, err := os.Stat(root); err != nil {
		return 0, fmt.Errorf("volume %s holds no %s/ folder, so it is not an app's volume: %w", vol.ID, guest.VolumeUpperDir, err)
	}
	pr, pw := io.Pipe()
	archived := make(chan struct{})
	go func() {
		defer close(archived)
		gz, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		_, err := WriteTar(ctx, gz, root, e.Environment)
		if cerr := gz.Close(); err == nil {
			err = cerr
		}
		pw.CloseWithError(err)
	}()
	n, err := w.opt.Objects.PutStream(ctx, key, pr)
	// The archiver stops at its next write and lets go of the mount
	// before it is unmounted.
	pr.CloseWithError(errors.New("the upload ended"))
	<-archived
	if err != nil {
		return 0, err
	}
	return n, nil
}
