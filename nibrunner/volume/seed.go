package volume

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/store"
)

// Phase is how far the making of a volume has come.
type Phase int32

// The phases of making a volume, in order.
const (
	// Waiting: not begun (the caller queued it).
	Waiting Phase = iota
	// Fetching: initialContents' archive is being fetched.
	Fetching
	// Unpacking: the archive is being unpacked.
	Unpacking
	// Formatting: mke2fs is writing the filesystem.
	Formatting
)

// Earlier is what an attempt to seed a volume that never ended (the
// daemon was stopped or restarted in the middle of it) left on the host,
// as the next attempt found it.
type Earlier struct {
	// StartedAt is when that attempt began.
	StartedAt time.Time
	// Fetched is how much of the archive it had fetched and checked.
	Fetched int64
	// Resumed: its archive was whole and checked, so this attempt unpacks
	// it without fetching it again; otherwise it fetches from the start
	// (a store is read whole, not by ranges).
	Resumed bool
}

// Progress is how the making of one volume is going, updated by Converge
// as it goes and read by anyone at any time (a report). The zero value is
// ready to use; nil means nobody asks.
type Progress struct {
	phase          atomic.Int32
	fetched, total atomic.Int64
	unpacked       atomic.Int64
	earlier        atomic.Pointer[Earlier]
}

// ProgressNow is a Progress read at one moment.
type ProgressNow struct {
	Phase Phase
	// Fetched and Total are the archive's bytes fetched and its size (0
	// until the store announced it); Unpacked the file bytes unpacked.
	Fetched, Total, Unpacked int64
	// Earlier is what an attempt that never ended left, nil when none did.
	Earlier *Earlier
}

// Now reads p.
func (p *Progress) Now() ProgressNow {
	if p == nil {
		return ProgressNow{}
	}
	return ProgressNow{Phase: Phase(p.phase.Load()), Fetched: p.fetched.Load(), Total: p.total.Load(), Unpacked: p.unpacked.Load(), Earlier: p.earlier.Load()}
}

func (p *Progress) setPhase(ph Phase) {
	if p != nil {
		p.phase.Store(int32(ph))
	}
}

// sizing is a store that tells p the size of what it gets.
type sizing struct {
	store.Store
	p *Progress
}

func (s sizing) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	r, n, err := s.Store.Get(ctx, key)
	if err == nil {
		s.p.total.Store(n)
	}
	return r, n, err
}

// fetchSeed fetches c's archive for volume id into its .part file, counting
// into p, and renames it whole once its size and digest are checked.
func (l *Local) fetchSeed(ctx context.Context, id string, c *Contents, p *Progress) (int64, error) {
	part := l.seedPartPath(id)
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := store.Fetch(ctx, sizing{l.Store, p}, c.ObjectKey, c.Digest, counter{f, &p.fetched})
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("fetch %q from the artifact store: %w", c.ObjectKey, cerr)
	}
	if err == nil {
		err = os.Rename(part, l.seedArchivePath(id))
	}
	return n, err
}

// counter adds what passes through it to n (nil: counts nothing).
type counter struct {
	w io.Writer
	n *atomic.Int64
}

func (c counter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// seedState is what an attempt to seed volume id keeps beside the volumes
// while it runs (.seed-<id>.json), so that the next one, after a restart,
// knows it was interrupted: the digest it fetched, when it began, and
// whether its archive (.seed-<id>.archive) is whole and checked.
type seedState struct {
	Digest    string    `json:"digest"`
	StartedAt time.Time `json:"startedAt"`
	Fetched   int64     `json:"fetched"`
	Whole     bool      `json:"whole"`
}

func (l *Local) seedStatePath(id string) string {
	return filepath.Join(l.Dir, ".seed-"+id+".json")
}
func (l *Local) seedArchivePath(id string) string {
	return filepath.Join(l.Dir, ".seed-"+id+".archive")
}
func (l *Local) seedPartPath(id string) string { return filepath.Join(l.Dir, ".seed-"+id+".part") }

// earlierSeed reads what an attempt to seed volume id with the archive
// digest left: its state and, when its archive is whole and checked, that
// the archive can be unpacked again. Anything else it left (of another
// digest, a half-fetched archive) is removed.
func (l *Local) earlierSeed(id, digest string) (*Earlier, error) {
	b, err := os.ReadFile(l.seedStatePath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, l.dropSeed(id)
	}
	if err != nil {
		return nil, fmt.Errorf("read what the last seed of volume %s left: %w", id, err)
	}
	var st seedState
	if json.Unmarshal(b, &st) != nil || st.Digest != digest {
		// Unreadable, or of another document's archive: start afresh.
		return nil, l.dropSeed(id)
	}
	e := &Earlier{StartedAt: st.StartedAt, Fetched: st.Fetched}
	if fi, err := os.Stat(l.seedPartPath(id)); err == nil && fi.Size() > e.Fetched {
		// Killed while fetching, it had no moment to note how far it
		// came: what it wrote says.
		e.Fetched = fi.Size()
	}
	_ = os.Remove(l.seedPartPath(id))
	if fi, err := os.Stat(l.seedArchivePath(id)); st.Whole && err == nil && fi.Size() == st.Fetched {
		e.Resumed = true
	} else {
		_ = os.Remove(l.seedArchivePath(id))
	}
	return e, nil
}

// writeSeedState records where the seed of volume id stands.
func (l *Local) writeSeedState(id string, st seedState) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(l.seedStatePath(id), b, 0o600); err != nil {
		return fmt.Errorf("record the seed of volume %s: %w", id, err)
	}
	return nil
}

// dropSeed removes what seeding volume id keeps between attempts.
func (l *Local) dropSeed(id string) error {
	var errs []error
	for _, p := range []string{l.seedStatePath(id), l.seedArchivePath(id), l.seedPartPath(id)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropFinishedSeeds removes, when a backend opens, what seeding left of
// volumes that are made (a crash between the rename and the cleanup).
func (l *Local) dropFinishedSeeds() {
	entries, _ := os.ReadDir(l.Dir)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".seed-") {
			continue
		}
		id := strings.TrimPrefix(name, ".seed-")
		for _, ext := range []string{".json", ".archive", ".part"} {
			id = strings.TrimSuffix(id, ext)
		}
		if _, err := os.Stat(l.Path(id)); err == nil {
			_ = l.dropSeed(id)
		}
	}
}

// seeding is one attempt to seed a volume from initialContents: its
// archive (.seed-<id>.archive) is kept beside the volumes until the volume
// is made, with a note of how far it came (.seed-<id>.json). An attempt
// interrupted (ctx ended, the daemon stopped or restarted) leaves both,
// and the next one uses the archive again without fetching it when it was
// whole, and fetches it from the start otherwise (Progress.Earlier says
// which). A failure, or an attempt given up (ErrGivenUp), leaves neither.
type seeding struct {
	l       *Local
	id      string
	c       *Contents
	p       *Progress
	st      seedState
	archive string
}

// beginSeed fetches c's object for volume id and checks its digest, or
// takes the whole one an interrupted attempt left, telling p how it goes.
// The caller ends the seeding with end, whatever happens next.
func (l *Local) beginSeed(ctx context.Context, id string, c *Contents, p *Progress, clk clock.Clock) (_ *seeding, err error) {
	if l.Store == nil {
		return nil, errors.New("initialContents: no artifact store is configured")
	}
	if p == nil {
		p = &Progress{}
	}
	earlier, err := l.earlierSeed(id, c.Digest)
	if err != nil {
		return nil, err
	}
	p.earlier.Store(earlier)
	sd := &seeding{l: l, id: id, c: c, p: p, st: seedState{Digest: c.Digest, StartedAt: clk.Now().UTC()}, archive: l.seedArchivePath(id)}
	defer func() {
		if err != nil {
			sd.end(ctx, err)
		}
	}()
	if earlier != nil && earlier.Resumed {
		sd.st.StartedAt, sd.st.Fetched, sd.st.Whole = earlier.StartedAt, earlier.Fetched, true
		p.fetched.Store(earlier.Fetched)
		p.total.Store(earlier.Fetched)
		return sd, nil
	}
	if err := l.writeSeedState(id, sd.st); err != nil {
		return nil, err
	}
	p.setPhase(Fetching)
	n, err := l.fetchSeed(ctx, id, c, p)
	if err != nil {
		return nil, fmt.Errorf("initialContents: %w", err)
	}
	sd.st.Fetched, sd.st.Whole = n, true
	if err := l.writeSeedState(id, sd.st); err != nil {
		return nil, err
	}
	return sd, nil
}

// end ends the seeding as err says: interrupted, it notes how far it came
// for the next attempt; failed or given up, it removes what it fetched;
// done, it leaves that to the caller (create, once the volume is in
// place).
func (sd *seeding) end(ctx context.Context, err error) {
	switch {
	case err == nil:
	case interrupted(ctx):
		if !sd.st.Whole {
			sd.st.Fetched = sd.p.fetched.Load()
		}
		_ = sd.l.writeSeedState(sd.id, sd.st)
	default:
		_ = sd.l.dropSeed(sd.id)
	}
}

// unpack unpacks the seed's archive under upper/destinationPath.
func (sd *seeding) unpack(ctx context.Context, upper string, size int64) (UnpackStats, error) {
	c, p := sd.c, sd.p
	p.setPhase(Unpacking)
	rel := strings.TrimPrefix(filepath.Clean("/"+c.DestinationPath), "/")
	dest := filepath.Join(upper, rel)
	if !strings.HasPrefix(dest+"/", upper+"/") {
		return UnpackStats{}, fmt.Errorf("initialContents: destinationPath %q leaves the root", c.DestinationPath)
	}
	// The folders down to it are the guest's, root-owned and open to the
	// tenant whatever the daemon's umask.
	if err := perm.MkdirExact(upper, dest, 0o755); err != nil {
		return UnpackStats{}, err
	}
	stats, err := Unpack(ctx, sd.archive, dest, UnpackOptions{UID: guest.TenantUID, GID: guest.TenantGID, Limit: size, Progress: &p.unpacked})
	if err != nil {
		return stats, fmt.Errorf("initialContents %q: %w", c.ObjectKey, err)
	}
	if dest == upper {
		// Seeded at "/": the entries are the tenant's, the root is not.
		if err := os.Chown(upper, 0, 0); err != nil {
			return stats, err
		}
	}
	return stats, nil
}
