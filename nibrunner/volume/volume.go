// Package volume keeps an app's writable disk: on the local-file backend, a
// sparse file on the host holding an ext4 filesystem, attached to the
// app's microVM as a raw drive and stacked writable over its layers.
//
// The package enforces the promises desired.json makes about tenant data:
// a volume is made once (and seeded once, from initialContents), it only
// ever grows, and it is deleted only when a document says absent for it — a
// volume missing from a document is left alone. Growing is offline: the
// caller stops the microVM first.
package volume

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"alpnib.dev/internal/keylock"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/store"
)

// Presence is what a document asks of a volume.
type Presence string

// The presences desired.json knows.
const (
	Present Presence = "present"
	Absent  Presence = "absent"
)

// Contents is a volume's initialContents: an archive in the artifact store
// unpacked under DestinationPath (a guest path) when the volume is made.
type Contents struct {
	Digest          string // sha256 of the archive object
	ObjectKey       string
	DestinationPath string
}

// Spec is one volume as a document lists it.
type Spec struct {
	VolumeID        string
	SizeBytes       uint64
	State           Presence
	InitialContents *Contents
	// Progress, when set, is told how the making of the volume goes (the
	// bytes of initialContents fetched and unpacked, the phase) and what
	// an earlier attempt interrupted by a restart left.
	Progress *Progress
	// Clock is what the times Converge keeps are read from (when a seed
	// began, which the next attempt reports): the caller's one clock
	// (nil: the machine's).
	Clock clock.Clock
}

// Volume is a volume as it is on the host.
type Volume struct {
	VolumeID  string
	Path      string // the file the microVM attaches
	SizeBytes int64
	Created   bool // this call made it
	Grown     bool // this call grew it
	Deleted   bool
	Seeded    *UnpackStats // what initialContents unpacked, when this call made it
	// Restored: this call made it from a checkpoint its initialContents
	// named (the checkpoint's image became the volume's).
	Restored bool
}

// Error is a volume that cannot be converged. Its message names the volume
// and says what is wrong; it is what reported.json shows.
type Error struct {
	VolumeID string
	Err      error
}

func (e *Error) Error() string { return "volume " + e.VolumeID + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ErrShrink is wrapped when a document asks for a smaller volume.
var ErrShrink = errors.New("a volume only grows")

// ErrGivenUp is the cause a caller cancels Converge's context with
// (context.WithCancelCause) when it gives up the making of a volume (the
// document no longer asks it), rather than interrupting it: a seed given
// up removes its archive and all it wrote, where an interrupted one keeps
// them for the next attempt.
var ErrGivenUp = errors.New("the making of the volume was given up")

// interrupted reports whether ctx ended without the making being given
// up: what a seed fetched is then kept for the next attempt.
func interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrGivenUp)
}

// RoundSize rounds a requested size up to a whole 512-byte sector.
func RoundSize(n uint64) uint64 { return (n + 511) &^ 511 }

var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// Local is the local-file backend: volume <id> is the file <Dir>/<id>.ext4.
type Local struct {
	Dir   string
	Store store.Store // where initialContents archives are fetched from
	// Tools: empty means look the program up on PATH, /usr/sbin and /sbin.
	Mke2fs, Resize2fs, E2fsck string
	// Jail, when set, confines the tools that parse what a tenant wrote
	// (e2fsck and resize2fs on a grow): a guest with root in its microVM
	// writes the volume's ext4 as it likes. nibrunnerd always sets it;
	// nil runs them as this process.
	Jail *jail.Tool

	locks keylock.Map // per volume
}

// NewLocal opens the backend on dir, making it if missing and clearing
// what a crash left half-made there.
func NewLocal(dir string, st store.Store) (*Local, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("volume folder %q must be an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("volume folder: %w", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".new-") || strings.HasPrefix(e.Name(), ".stage-") {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	l := &Local{Dir: dir, Store: st}
	l.dropFinishedSeeds()
	return l, nil
}

// Path is the file that holds volume id.
func (l *Local) Path(id string) string { return filepath.Join(l.Dir, id+".ext4") }

// Converge makes the host's volume what spec asks: made (and seeded) when
// missing, grown when larger, deleted when absent. A smaller size is refused
// and the volume left as it is. Failures are *Error naming the volume.
func (l *Local) Converge(ctx context.Context, spec Spec) (Volume, error) {
	defer l.lock(spec.VolumeID)()
	v, err := l.converge(ctx, spec)
	if err != nil {
		return v, &Error{VolumeID: spec.VolumeID, Err: err}
	}
	return v, nil
}

// lock serialises work on one volume; different volumes proceed in
// parallel.
func (l *Local) lock(id string) func() { return l.locks.Lock(id) }

func (l *Local) converge(ctx context.Context, spec Spec) (Volume, error) {
	if !idPattern.MatchString(spec.VolumeID) {
		return Volume{}, fmt.Errorf("%q is not a volume identifier", spec.VolumeID)
	}
	v := Volume{VolumeID: spec.VolumeID, Path: l.Path(spec.VolumeID)}
	st, statErr := os.Stat(v.Path)
	exists := statErr == nil
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		return v, statErr
	}
	switch spec.State {
	case Absent:
		if exists {
			if err := os.Remove(v.Path); err != nil {
				return v, fmt.Errorf("delete: %w", err)
			}
		}
		if err := l.dropSeed(spec.VolumeID); err != nil {
			return v, fmt.Errorf("delete what seeding it left: %w", err)
		}
		v.Deleted = true
		return v, nil
	case Present:
	default:
		return v, fmt.Errorf("desiredState %q is neither present nor absent", spec.State)
	}
	want := int64(RoundSize(spec.SizeBytes))
	if !exists {
		seeded, restored, err := l.create(ctx, spec, v.Path, want)
		if err != nil {
			if !interrupted(ctx) {
				// Failed or given up rather than interrupted: the next
				// attempt is a new one, and fetches afresh.
				_ = l.dropSeed(spec.VolumeID)
			}
			return v, err
		}
		v.SizeBytes, v.Created, v.Seeded, v.Restored = want, true, seeded, restored
		return v, nil
	}
	have := st.Size()
	v.SizeBytes = have
	switch {
	case want < have:
		return v, fmt.Errorf("%w: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", ErrShrink, have, spec.SizeBytes, have)
	case want > have:
		if err := l.grow(ctx, v.Path, want); err != nil {
			return v, err
		}
		v.SizeBytes, v.Grown = want, true
	}
	return v, nil
}

// create formats a new volume beside its final name and renames it into
// place, so a crash never leaves a half-made volume that looks made.
//
// initialContents that names a checkpoint rather than an archive is
// restored instead (restore): its image becomes the volume's, and
// restored says so.
func (l *Local) create(ctx context.Context, spec Spec, path string, size int64) (_ *UnpackStats, restored bool, err error) {
	stage, err := os.MkdirTemp(l.Dir, ".stage-"+spec.VolumeID+"-")
	if err != nil {
		return nil, false, err
	}
	defer os.RemoveAll(stage)
	// The filesystem's root is the guest's overlay home: VolumeUpperDir is
	// the app's root as written, root-owned like any /; what the archive
	// holds goes under it at destinationPath and is the tenant's.
	tree := filepath.Join(stage, "tree")
	upper := filepath.Join(tree, guest.VolumeUpperDir)
	if err := os.MkdirAll(upper, 0o755); err != nil {
		return nil, false, err
	}
	for _, d := range []string{tree, upper} {
		if err := os.Chmod(d, 0o755); err != nil {
			return nil, false, err
		}
	}
	var seeded *UnpackStats
	if c := spec.InitialContents; c != nil {
		var sd *seeding
		if sd, err = l.beginSeed(ctx, spec.VolumeID, c, spec.Progress, clock.Or(spec.Clock)); err != nil {
			return nil, false, err
		}
		// err is create's: the seeding ends as the making of the volume
		// does.
		defer func() { sd.end(ctx, err) }()
		if head, _ := sniff(sd.archive, 8); checkpoint.IsContainer(head) {
			return nil, true, l.restore(ctx, spec, sd, path, size)
		}
		var stats UnpackStats
		if stats, err = sd.unpack(ctx, upper, size); err != nil {
			return nil, false, err
		}
		seeded = &stats
	}
	spec.Progress.setPhase(Formatting)
	tmp := filepath.Join(l.Dir, ".new-"+spec.VolumeID+"-"+randHex())
	defer os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, false, err
	}
	err = f.Truncate(size) // sparse: the host spends only what ext4 writes
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, false, fmt.Errorf("make the volume file: %w", err)
	}
	mke2fs, err := tool(l.Mke2fs, "mke2fs")
	if err != nil {
		return nil, false, err
	}
	// -m 0: the tenant is not root, so a root reserve would only be space it
	// cannot use. root_owner=0:0: the filesystem root is the guest's, not
	// the tenant's (the tenant owns what lies at destinationPath).
	out, err := run(ctx, mke2fs, "-q", "-F", "-t", "ext4", "-m", "0", "-E", "root_owner=0:0", "-L", label(spec.VolumeID), "-d", tree, tmp)
	if err != nil {
		if strings.Contains(out, "Could not allocate block") || strings.Contains(out, "No space left") || strings.Contains(out, "Could not allocate inode") {
			return nil, false, fmt.Errorf("initialContents: %w: %d bytes is too small for its contents and ext4's own structures; ask for a larger sizeBytes", ErrDoesNotFit, size)
		}
		if strings.Contains(out, "Not enough space to build") || strings.Contains(out, "too small") {
			return nil, false, fmt.Errorf("sizeBytes %d is too small to hold an ext4 filesystem; ask for a few MiB at least", size)
		}
		return nil, false, fmt.Errorf("format with mke2fs: %w: %s", err, out)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, false, err
	}
	if err := l.dropSeed(spec.VolumeID); err != nil {
		return nil, false, fmt.Errorf("the volume is made, but what seeding it left is not removed: %w", err)
	}
	return seeded, false, nil
}

// grow extends the file and the filesystem in it. The volume must not be
// attached to a running microVM.
func (l *Local) grow(ctx context.Context, path string, size int64) error {
	head, err := sniff(path, 1082)
	if err != nil {
		return err
	}
	if len(head) < 1082 || head[1080] != 0x53 || head[1081] != 0xEF {
		return fmt.Errorf("grow: %s does not hold an ext4 filesystem; it was not made by this host", path)
	}
	e2fsck, err := tool(l.E2fsck, "e2fsck")
	if err != nil {
		return err
	}
	resize2fs, err := tool(l.Resize2fs, "resize2fs")
	if err != nil {
		return err
	}
	// resize2fs insists on a freshly checked filesystem. -p repairs only
	// what is safe unattended; exit 1 means it fixed something, which is fine.
	if out, err := l.runOn(ctx, path, e2fsck, "-f", "-p", path); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			return fmt.Errorf("grow: check the filesystem first with e2fsck: %w: %s", err, out)
		}
	}
	if err := os.Truncate(path, size); err != nil {
		return fmt.Errorf("grow: %w", err)
	}
	if out, err := l.runOn(ctx, path, resize2fs, path); err != nil {
		return fmt.Errorf("grow: resize2fs: %w: %s", err, out)
	}
	return nil
}

func label(id string) string {
	if len(id) > 16 { // ext4 labels hold 16 bytes
		return id[:16]
	}
	return id
}

// runOn runs a tool that reads and writes the volume at path: in l's jail
// when it has one. In the jail neither /proc/mounts nor /etc/mtab exists,
// and EXT2FS_NO_MTAB_OK tells e2fsprogs that this means "not mounted"
// (lib/ext2fs/ismounted.c), which holds: a volume is grown offline.
func (l *Local) runOn(ctx context.Context, path, name string, args ...string) (string, error) {
	if l.Jail == nil {
		return run(ctx, name, args...)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return l.Jail.Run(ctx, []string{path}, []string{"EXT2FS_NO_MTAB_OK=1"}, name, args...)
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		// Stopped, not failed: say so, so the caller can tell.
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return strings.TrimSpace(out.String()), err
}

func tool(configured, name string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed (Debian e2fsprogs)", name)
}

func randHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
