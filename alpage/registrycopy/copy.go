// Package registrycopy keeps a certified local copy of the NNS registry: a
// SQLite file with every version of every key the registry canister has
// certified, brought up to date with get_certified_changes_since. Each reply
// is verified (the certificate under the root key, the registry's certified
// data, the hash tree of the deltas, and that its versions follow on from
// the copy's without a gap) before it is applied, in one transaction per
// reply, so a crash leaves the copy at the last version it fully applied.
//
// It lives under alpage, not ic, because where the copy is kept and what
// happens when a reply does not verify (refused, the copy kept as it is:
// versions only go forward) are alp's decisions; the verification itself
// is ic/nns's.
package registrycopy

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"alpnib.dev/internal/flock"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// schemaVersion is the layout of the file; a copy of another layout is
// rebuilt.
const schemaVersion = 1

// Dir is where the copy for the network with rootKeyDER is kept under
// cacheDir ($XDG_CACHE_HOME): alp/registry/<sha256 of the DER root key>.
// Each network (mainnet, every devnet) has its own, so no copy is ever
// read for a network it was not certified by.
func Dir(cacheDir string, rootKeyDER []byte) string {
	sum := sha256.Sum256(rootKeyDER)
	return filepath.Join(cacheDir, "alp", "registry", hex.EncodeToString(sum[:]))
}

// FileName is the copy's SQLite file inside its Dir.
const FileName = "registry.sqlite"

// Copy is an open registry copy. It is safe for concurrent use, and
// several processes may open the same file: writes take SQLite's write
// lock (BEGIN IMMEDIATE) and readers see the last committed version.
// While it is open it holds a shared lock on its dir's lockFile, so no run
// discards the file under it (see lockFile).
type Copy struct {
	db   *sql.DB
	path string
	lock *os.File // the shared lock on lockFile; closing it releases the lock
}

// Open opens (creating when absent) the copy in dir, and holds it in use
// (a shared lock on lockFile) until Close. It waits for a run that holds
// the exclusive lock (creating or discarding the file) for up to
// LockWait, or until ctx is done.
func Open(ctx context.Context, dir string) (*Copy, error) {
	return openShared(ctx, dir, layout{schema: schemaVersion, wait: LockWait})
}

// LockWait bounds how long a run waits for the lock on a copy's dir: to
// use the copy while another run creates or discards it (which is short),
// or to discard it while other runs use it (which lasts as long as they
// do). After it, the run fails saying which file is in use.
const LockWait = 30 * time.Second

// ErrInUse: the copy's lock was not had within LockWait.
var ErrInUse = errors.New("in use by another run")

// layout is what a run expects of the file (the schema version this code
// writes) and how long it waits for the lock; tests vary both to act as a
// run of another version.
type layout struct {
	schema int
	wait   time.Duration
}

// lockFile, in a copy's dir, says who may touch the copy's file. Each run
// that has the copy open holds a shared lock on it (LOCK_SH), so several
// runs read and write the copy at once. Creating the file, and discarding
// a file that is not a copy (damaged, or of another layout: a binary of
// another version), take the exclusive lock (LOCK_EX), and so happen only
// while no run has the file open. SQLite's own locks order the writes;
// this one keeps a run from removing the file another run is using (it
// would go on writing to an unlinked file, and its work would be lost),
// and runs that create the file at once from switching it to WAL together
// (SQLite answers "database is locked" to that without waiting).
const lockFile = "registry.lock"

// openLock creates dir and opens its lockFile, without locking it.
func openLock(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("registry copy: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("registry copy: lock: %w", err)
	}
	return f, nil
}

// lockPoll is the first and the longest pause between tries of a lock
// another run holds.
const lockPoll, lockPollMax = time.Millisecond, 50 * time.Millisecond

// tryLock takes how (flock.Shared or flock.Exclusive) on f without waiting;
// held is false when another run holds a lock that excludes it.
func tryLock(f *os.File, how int) (held bool, err error) {
	held, err = flock.Try(f, how)
	if err != nil {
		return false, fmt.Errorf("registry copy: lock %s: %w", f.Name(), err)
	}
	return held, nil
}

// lock takes how on f, trying again until wait has passed or ctx is done.
// f is not closed on failure. what the run was doing, and what the user can
// do about a lock not had in time, go into the error.
func lock(ctx context.Context, f *os.File, how int, wait time.Duration, what, todo string) error {
	copyPath := filepath.Join(filepath.Dir(f.Name()), FileName)
	return retry(ctx, wait, func() (bool, error) { return tryLock(f, how) },
		func() error {
			return fmt.Errorf("registry copy %s: %w: %s, waited %s for the lock on %s; %s", copyPath, ErrInUse, what, wait, f.Name(), todo)
		},
		func(err error) error {
			return fmt.Errorf("registry copy %s: %s: waiting for the lock on %s: %w", copyPath, what, f.Name(), err)
		})
}

// retry calls try until it is done or fails, for at most wait, pausing
// between tries (lockPoll at first, doubling up to lockPollMax): what
// every wait for another run does here. It returns try's error as it is,
// timedOut's once wait has passed, and cancelled's (given ctx's error)
// when ctx ends first.
func retry(ctx context.Context, wait time.Duration, try func() (done bool, err error), timedOut func() error, cancelled func(error) error) error {
	deadline := time.Now().Add(wait)
	pause := lockPoll
	for {
		done, err := try()
		if done || err != nil {
			return err
		}
		if !time.Now().Before(deadline) {
			return timedOut()
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return cancelled(ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, lockPollMax)
	}
}

// openShared opens the copy in dir under a shared lock, which the Copy
// keeps. A file that is not there yet is first created, under the
// exclusive lock; then the run opens it as every other run does.
func openShared(ctx context.Context, dir string, l layout) (*Copy, error) {
	path := filepath.Join(dir, FileName)
	for {
		f, err := openLock(dir)
		if err != nil {
			return nil, err
		}
		if err := lock(ctx, f, flock.Shared, l.wait, "opening it",
			"another run holds it to create or discard the copy: let that run finish and run again"); err != nil {
			f.Close()
			return nil, err
		}
		// Under the shared lock nobody creates or discards the file.
		if _, err := os.Stat(path); err == nil {
			c, err := open(dir, l.schema)
			if err != nil {
				f.Close()
				return nil, err
			}
			c.lock = f
			return c, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			f.Close()
			return nil, fmt.Errorf("registry copy: %w", err)
		}
		f.Close()
		if err := create(ctx, dir, l); err != nil {
			return nil, err
		}
		// Open it as any other run would; it may be gone again by then
		// (discarded by a run of another version), and is made again.
	}
}

// create makes the copy's file in dir, under the exclusive lock, unless
// another run made it first.
func create(ctx context.Context, dir string, l layout) error {
	f, err := openLock(dir)
	if err != nil {
		return err
	}
	defer f.Close() // closing the file releases the lock
	if err := lock(ctx, f, flock.Exclusive, l.wait, "creating it",
		"other runs still have a copy at this path open (one that was removed under them): let them finish and run again"); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		return nil // another run made it
	}
	c, err := open(dir, l.schema)
	if err != nil {
		return err
	}
	return c.db.Close()
}

// damaged says whether an error from Open means the file is not a copy
// this code can read (not SQLite, corrupt, another layout), rather than
// that it could not be opened just now.
func damaged(err error) bool {
	if errors.Is(err, errSchema) {
		return true
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code, without the extended bits
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return true
	}
	return false
}

// open opens the file in dir, creating it when absent, and checks that it
// is a copy of the given schema version. The caller holds the lock.
func open(dir string, schema int) (*Copy, error) {
	path := filepath.Join(dir, FileName)
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("registry copy %s: %w", path, err)
	}
	c := &Copy{db: db, path: path}
	if err := c.init(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("registry copy %s: %w", path, err)
	}
	return c, nil
}

// errSchema: the file is a copy of another layout.
var errSchema = errors.New("the copy has another layout")

func (c *Copy) init(schema int) error {
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		// One row per version of a key; a NULL value is a deletion.
		`CREATE TABLE IF NOT EXISTS entries (key TEXT NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)) WITHOUT ROWID`,
		`INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', '` + strconv.Itoa(schema) + `'), ('version', '0')`,
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	var got string
	if err := tx.QueryRow(`SELECT value FROM meta WHERE name = 'schema'`).Scan(&got); err != nil {
		return err
	}
	if got != strconv.Itoa(schema) {
		return fmt.Errorf("%w (%s, not %d)", errSchema, got, schema)
	}
	return tx.Commit()
}

// Path is the copy's file.
func (c *Copy) Path() string { return c.path }

// Close closes the file, then lets go of it (the shared lock).
func (c *Copy) Close() error {
	err := c.db.Close()
	if c.lock != nil {
		c.lock.Close()
	}
	return err
}

// Version is the registry version the copy holds every change up to.
func (c *Copy) Version(ctx context.Context) (uint64, error) {
	return versionOf(ctx, c.db)
}

type queryer interface {
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func versionOf(ctx context.Context, q queryer) (uint64, error) {
	var s string
	if err := q.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = 'version'`).Scan(&s); err != nil {
		return 0, fmt.Errorf("registry copy version: %w", err)
	}
	return strconv.ParseUint(s, 10, 64)
}

// Get returns key's value at version (0: the copy's version) and the
// version that wrote it; found is false when the key holds nothing then.
func (c *Copy) Get(ctx context.Context, key string, version uint64) (value []byte, at uint64, found bool, err error) {
	if version == 0 {
		if version, err = c.Version(ctx); err != nil {
			return nil, 0, false, err
		}
	}
	err = c.db.QueryRowContext(ctx, `SELECT version, value FROM entries WHERE key = ? AND version <= ? ORDER BY version DESC LIMIT 1`, key, int64(version)).Scan(&at, &value)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, 0, false, nil
	case err != nil:
		return nil, 0, false, fmt.Errorf("registry copy: read %s: %w", key, err)
	case value == nil:
		return nil, 0, false, nil // deleted
	}
	return value, at, true, nil
}

// Record is a key's value at a version, and the version that wrote it.
type Record struct {
	Key     string
	Value   []byte
	Version uint64
}

// Scan returns every key with prefix that holds a value at version, with
// that value, sorted by key.
func (c *Copy) Scan(ctx context.Context, prefix string, version uint64) ([]Record, error) {
	// The newest entry at or below version per key; deletions dropped.
	rows, err := c.db.QueryContext(ctx, `
		SELECT e.key, e.value, e.version FROM entries e
		JOIN (SELECT key, MAX(version) AS v FROM entries WHERE key >= ? AND key < ? AND version <= ? GROUP BY key) m
		ON e.key = m.key AND e.version = m.v
		WHERE e.value IS NOT NULL ORDER BY e.key`, prefix, prefix+"\xff", int64(version))
	if err != nil {
		return nil, fmt.Errorf("registry copy: scan %s: %w", prefix, err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.Key, &r.Value, &r.Version); err != nil {
			return nil, fmt.Errorf("registry copy: scan %s: %w", prefix, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// discardAndOpen opens the copy in dir, first removing its files (the
// database and its WAL) when they are still not a copy (damaged). It
// removes them only under the exclusive lock, so only once no run has the
// file open: a run of another version may be using it, and several runs
// may each have found the same damaged file — only the first may discard
// it, and the others open the copy it made. While other runs hold the file
// it looks again every so often, opening the file as soon as it is a copy
// (another run rebuilt it), and gives up after l.wait with ErrInUse. It
// says on log when it has to wait. why is the damage it found and
// discarded, nil when it discarded nothing.
func discardAndOpen(ctx context.Context, dir string, l layout, log io.Writer) (c *Copy, why error, err error) {
	path := filepath.Join(dir, FileName)
	said := false
	// try opens the copy, discarding a damaged file when no run holds it
	// (and opening what is there then, as any run would); it is not done
	// while other runs hold the damaged file.
	try := func() (bool, error) {
		for {
			var err error
			if c, err = openShared(ctx, dir, l); err == nil || !damaged(err) {
				return true, err
			}
			f, err := openLock(dir)
			if err != nil {
				return true, err
			}
			held, err := tryLock(f, flock.Exclusive)
			if err != nil || !held {
				f.Close()
				if err == nil && !said {
					fmt.Fprintf(log, "registry copy %s: another run has it open; waiting up to %s for it to finish before discarding it\n", path, l.wait)
					said = true
				}
				return err != nil, err
			}
			discarded, err := discardDamaged(dir, l.schema)
			f.Close()
			if err != nil {
				return true, err
			}
			if discarded != nil {
				why = discarded
			}
		}
	}
	err = retry(ctx, l.wait, try,
		func() error {
			return fmt.Errorf("registry copy %s: %w: it is not a copy this alp can read, and after %s another run (an alp of another version?) still has it open, so it was not discarded; let that run finish and run again, or give this alp a cache of its own (XDG_CACHE_HOME)", path, ErrInUse, l.wait)
		},
		func(err error) error { return fmt.Errorf("registry copy %s: waiting to discard it: %w", path, err) })
	if err != nil {
		return nil, why, err
	}
	return c, why, nil
}

// discardDamaged, under the exclusive lock, looks at the file in dir once
// more and removes it when it is still not a copy of schema, returning why
// (nil when it is a copy now: another run rebuilt it first).
func discardDamaged(dir string, schema int) (error, error) {
	c, why := open(dir, schema)
	if why == nil {
		return nil, c.db.Close()
	}
	if !damaged(why) {
		return nil, why
	}
	if err := discard(dir); err != nil {
		return nil, fmt.Errorf("registry copy %s: discard: %w", filepath.Join(dir, FileName), err)
	}
	return why, nil
}

func discard(dir string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, FileName+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
