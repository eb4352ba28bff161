// Package registrycopy keeps a certified local copy of the NNS registry: a
// SQLite file with every version of every key the registry canister has
// certified, brought up to date with get_certified_changes_since. Each reply
// is verified (the certificate under the root key, the registry's certified
// data, the hash tree of the deltas, and that its versions follow on from
// the copy's without a gap) before it is applied, in one transaction per
// reply, so a crash leaves the copy at the last version it fully applied.
//
// It lives under alpage, not ic, because where the copy is kept and what
// happens when it does not verify (discard and rebuild, saying so) are
// alp's decisions; the verification itself is ic/nns's.
package registrycopy

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
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
type Copy struct {
	db   *sql.DB
	path string
}

// Open opens (creating when absent) the copy in dir. Runs that open the
// same dir at once take turns: SQLite answers "database is locked", without
// waiting on its busy timeout, to a connection that switches a file another
// connection is creating to WAL, so creating the file is done under a lock
// on dir (lockFile).
func Open(dir string) (*Copy, error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return open(dir)
}

// lockFile, in a copy's dir, is held while the copy is created or
// discarded.
const lockFile = "registry.lock"

// lockDir creates dir and takes an exclusive lock on its lockFile; the
// func releases it.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("registry copy: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("registry copy: lock: %w", err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("registry copy: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil // closing the file releases the lock
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

func open(dir string) (*Copy, error) {
	path := filepath.Join(dir, FileName)
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(30000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("registry copy %s: %w", path, err)
	}
	c := &Copy{db: db, path: path}
	if err := c.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("registry copy %s: %w", path, err)
	}
	return c, nil
}

// errSchema: the file is a copy of another layout.
var errSchema = errors.New("the copy has another layout")

func (c *Copy) init() error {
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)`,
		// One row per version of a key; a NULL value is a deletion.
		`CREATE TABLE IF NOT EXISTS entries (key TEXT NOT NULL, version INTEGER NOT NULL, value BLOB, PRIMARY KEY (key, version)) WITHOUT ROWID`,
		`INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', '` + strconv.Itoa(schemaVersion) + `'), ('version', '0')`,
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s); err != nil {
			return err
		}
	}
	var schema string
	if err := tx.QueryRow(`SELECT value FROM meta WHERE name = 'schema'`).Scan(&schema); err != nil {
		return err
	}
	if schema != strconv.Itoa(schemaVersion) {
		return fmt.Errorf("%w (%s, not %d)", errSchema, schema, schemaVersion)
	}
	return tx.Commit()
}

// Path is the copy's file.
func (c *Copy) Path() string { return c.path }

// Close closes the file.
func (c *Copy) Close() error { return c.db.Close() }

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

// Record is a key's value at a version.
type Record struct {
	Key   string
	Value []byte
}

// Scan returns every key with prefix that holds a value at version, with
// that value, sorted by key.
func (c *Copy) Scan(ctx context.Context, prefix string, version uint64) ([]Record, error) {
	// The newest entry at or below version per key; deletions dropped.
	rows, err := c.db.QueryContext(ctx, `
		SELECT e.key, e.value FROM entries e
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
		if err := rows.Scan(&r.Key, &r.Value); err != nil {
			return nil, fmt.Errorf("registry copy: scan %s: %w", prefix, err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// discardAndOpen opens the copy in dir, first removing its files (the
// database and its WAL) when they are still not a copy (damaged) once it
// holds the lock: several runs may each have found the same damaged file,
// and only the first may discard it — the others open the copy it made.
// why is the damage found, nil when there was none left to discard.
func discardAndOpen(dir string) (c *Copy, why error, err error) {
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	c, why = open(dir)
	if why == nil {
		return c, nil, nil
	}
	if !damaged(why) {
		return nil, nil, why
	}
	if err := discard(dir); err != nil {
		return nil, why, fmt.Errorf("registry copy: discard: %w", err)
	}
	c, err = open(dir)
	return c, why, err
}

func discard(dir string) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, FileName+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
