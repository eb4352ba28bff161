// Package db is the host daemon's memory: one SQLite file in state_dir
// holding the last accepted document, each app's slot, each instance's
// record, the meters, the volumes it deleted and each volume's last
// failure. Everything else the daemon
// knows it can observe again; these it cannot.
//
// Order matters for crash safety: a slot is written before any record that
// relies on it, so a crash between the two leaves a slot without a record
// (harmless, the next pass reuses it) and never a record without a slot.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// migrations are applied in order; PRAGMA user_version counts how many
// already were. Never edit one that shipped: append a new one.
var migrations = []string{
	`CREATE TABLE accepted (
		id          INTEGER PRIMARY KEY CHECK (id = 1),
		digest      TEXT NOT NULL,
		document    BLOB NOT NULL,
		accepted_at INTEGER NOT NULL
	);
	CREATE TABLE slots (
		app_id TEXT PRIMARY KEY,
		slot   INTEGER NOT NULL UNIQUE
	);
	CREATE TABLE instances (
		app_id        TEXT PRIMARY KEY,
		deployment_id TEXT NOT NULL,
		record        BLOB NOT NULL
	);
	CREATE TABLE meters (
		app_id     TEXT PRIMARY KEY,
		running_ms INTEGER NOT NULL DEFAULT 0,
		idle_ms    INTEGER NOT NULL DEFAULT 0,
		cpu_ms     INTEGER NOT NULL DEFAULT 0,
		rx_bytes   INTEGER NOT NULL DEFAULT 0,
		tx_bytes   INTEGER NOT NULL DEFAULT 0
	);
	CREATE TABLE deleted_volumes (
		volume_id  TEXT PRIMARY KEY,
		app_id     TEXT NOT NULL,
		size_bytes INTEGER NOT NULL,
		deleted_at INTEGER NOT NULL
	);`,
	// Slots are written before records: a record names a guest that owns
	// host ports, an address and a tap, and those come from its slot. A
	// record without one is a bug the database refuses rather than keeps.
	`CREATE TRIGGER instance_needs_slot BEFORE INSERT ON instances
	WHEN NOT EXISTS (SELECT 1 FROM slots WHERE app_id = NEW.app_id)
	BEGIN
		SELECT RAISE(ABORT, 'an instance record is written only after its app has a slot');
	END;`,
	// A volume's last failed action, so that a restart keeps its backoff
	// (and the sentence the report gives it) rather than trying at once.
	`CREATE TABLE volume_failures (
		volume_id  TEXT PRIMARY KEY,
		kind       TEXT NOT NULL,
		size_bytes INTEGER NOT NULL,
		seed       TEXT NOT NULL,
		count      INTEGER NOT NULL,
		failed_at  INTEGER NOT NULL,
		message    TEXT NOT NULL
	);`,
	// The events `nibrunnerd events` shows, so that a restart keeps them:
	// each one's JSON as the control socket serves it, by its number.
	`CREATE TABLE events (
		seq   INTEGER PRIMARY KEY,
		event BLOB NOT NULL
	);`,
}

// DB is an open state database. It is safe for concurrent use.
type DB struct {
	sql *sql.DB
}

// Open opens (creating if needed) the database at path and brings its
// schema up to date. The database holds tenants' environments, so it and
// its -wal and -shm files are root's alone (0600): a new one is made so
// before SQLite opens it (SQLite gives the -wal and -shm files the mode of
// the database), and an existing one found more open is tightened.
func Open(ctx context.Context, path string) (*DB, error) {
	if err := private(path); err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	s, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)")
	if err != nil {
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	// One writer at a time is what SQLite allows anyway; one connection
	// makes that explicit and keeps the pragmas on every statement.
	s.SetMaxOpenConns(1)
	d := &DB{sql: s}
	if err := d.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open state database %s: %w", path, err)
	}
	return d, nil
}

// private creates the database file at path 0600 when there is none,
// and takes every permission but the owner's off it and its -wal and -shm
// files otherwise.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close closes the database.
func (d *DB) Close() error { return d.sql.Close() }

func (d *DB) migrate(ctx context.Context) error {
	var v int
	if err := d.sql.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this daemon knows (%d)", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		tx, err := d.sql.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, i+1)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", i+1, err)
		}
	}
	return nil
}

// Version returns the schema version.
func (d *DB) Version(ctx context.Context) (int, error) {
	var v int
	if err := d.sql.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// Accepted is the last document the daemon accepted.
type Accepted struct {
	Digest     string
	Document   []byte
	AcceptedAt time.Time
}

// Accepted returns the last accepted document; ok is false when none was.
func (d *DB) Accepted(ctx context.Context) (a Accepted, ok bool, err error) {
	var at int64
	err = d.sql.QueryRowContext(ctx, `SELECT digest, document, accepted_at FROM accepted WHERE id = 1`).Scan(&a.Digest, &a.Document, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Accepted{}, false, nil
	}
	if err != nil {
		return Accepted{}, false, fmt.Errorf("read the accepted document: %w", err)
	}
	a.AcceptedAt = time.UnixMilli(at).UTC()
	return a, true, nil
}

// SetAccepted records a newly accepted document.
func (d *DB) SetAccepted(ctx context.Context, a Accepted) error {
	_, err := d.sql.ExecContext(ctx, `INSERT INTO accepted (id, digest, document, accepted_at) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, document = excluded.document, accepted_at = excluded.accepted_at`,
		a.Digest, a.Document, a.AcceptedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("record the accepted document: %w", err)
	}
	return nil
}

// Slots returns every app's slot.
func (d *DB) Slots(ctx context.Context) (map[string]int, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT app_id, slot FROM slots`)
	if err != nil {
		return nil, fmt.Errorf("read slots: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var app string
		var slot int
		if err := rows.Scan(&app, &slot); err != nil {
			return nil, fmt.Errorf("read slots: %w", err)
		}
		out[app] = slot
	}
	return out, rows.Err()
}

// PutSlots records slots for apps (new assignments; existing ones are
// kept as they are).
func (d *DB) PutSlots(ctx context.Context, slots map[string]int) error {
	if len(slots) == 0 {
		return nil
	}
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record slots: %w", err)
	}
	defer tx.Rollback()
	for app, slot := range slots {
		if _, err := tx.ExecContext(ctx, `INSERT INTO slots (app_id, slot) VALUES (?, ?) ON CONFLICT (app_id) DO NOTHING`, app, slot); err != nil {
			return fmt.Errorf("record slot %d for %s: %w", slot, app, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record slots: %w", err)
	}
	return nil
}

// ReleaseSlot frees app's slot once the app is forgotten.
func (d *DB) ReleaseSlot(ctx context.Context, app string) error {
	if _, err := d.sql.ExecContext(ctx, `DELETE FROM slots WHERE app_id = ?`, app); err != nil {
		return fmt.Errorf("release the slot of %s: %w", app, err)
	}
	return nil
}

// Record is an instance record as stored: the daemon owns its encoding.
type Record struct {
	AppID        string
	DeploymentID string
	Data         []byte
}

// Records returns every instance record by app.
func (d *DB) Records(ctx context.Context) (map[string]Record, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT app_id, deployment_id, record FROM instances`)
	if err != nil {
		return nil, fmt.Errorf("read instance records: %w", err)
	}
	defer rows.Close()
	out := map[string]Record{}
	for rows.Next() {
		var r Record
		if err := rows.Scan(&r.AppID, &r.DeploymentID, &r.Data); err != nil {
			return nil, fmt.Errorf("read instance records: %w", err)
		}
		out[r.AppID] = r
	}
	return out, rows.Err()
}

// Change is one pass's worth of writes, applied in one transaction so a
// pass persists all or nothing.
type Change struct {
	Put    []Record
	Delete []string // app ids whose record (and meters) go
	Meters map[string]Meters
}

// Apply writes c in one transaction.
func (d *DB) Apply(ctx context.Context, c Change) error {
	if len(c.Put) == 0 && len(c.Delete) == 0 && len(c.Meters) == 0 {
		return nil
	}
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("persist instance records: %w", err)
	}
	defer tx.Rollback()
	for _, r := range c.Put {
		if _, err := tx.ExecContext(ctx, `INSERT INTO instances (app_id, deployment_id, record) VALUES (?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET deployment_id = excluded.deployment_id, record = excluded.record`,
			r.AppID, r.DeploymentID, r.Data); err != nil {
			return fmt.Errorf("persist the record of %s: %w", r.AppID, err)
		}
	}
	for _, app := range c.Delete {
		if _, err := tx.ExecContext(ctx, `DELETE FROM instances WHERE app_id = ?`, app); err != nil {
			return fmt.Errorf("forget the record of %s: %w", app, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM meters WHERE app_id = ?`, app); err != nil {
			return fmt.Errorf("forget the meters of %s: %w", app, err)
		}
	}
	for app, m := range c.Meters {
		// MAX keeps meters from ever going backwards, whatever a caller passes.
		if _, err := tx.ExecContext(ctx, `INSERT INTO meters (app_id, running_ms, idle_ms, cpu_ms, rx_bytes, tx_bytes) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (app_id) DO UPDATE SET
				running_ms = MAX(running_ms, excluded.running_ms),
				idle_ms = MAX(idle_ms, excluded.idle_ms),
				cpu_ms = MAX(cpu_ms, excluded.cpu_ms),
				rx_bytes = MAX(rx_bytes, excluded.rx_bytes),
				tx_bytes = MAX(tx_bytes, excluded.tx_bytes)`,
			app, int64(m.RunningMs), int64(m.IdleMs), int64(m.CpuMs), int64(m.RxBytes), int64(m.TxBytes)); err != nil {
			return fmt.Errorf("persist the meters of %s: %w", app, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("persist instance records: %w", err)
	}
	return nil
}

// Meters are an app's counters.
type Meters struct {
	RunningMs, IdleMs, CpuMs, RxBytes, TxBytes uint64
}

// AllMeters returns every app's meters.
func (d *DB) AllMeters(ctx context.Context) (map[string]Meters, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT app_id, running_ms, idle_ms, cpu_ms, rx_bytes, tx_bytes FROM meters`)
	if err != nil {
		return nil, fmt.Errorf("read meters: %w", err)
	}
	defer rows.Close()
	out := map[string]Meters{}
	for rows.Next() {
		var app string
		var m Meters
		if err := rows.Scan(&app, &m.RunningMs, &m.IdleMs, &m.CpuMs, &m.RxBytes, &m.TxBytes); err != nil {
			return nil, fmt.Errorf("read meters: %w", err)
		}
		out[app] = m
	}
	return out, rows.Err()
}

// DeletedVolume is a volume the daemon deleted on an explicit absent; it
// keeps being reported as deleted.
type DeletedVolume struct {
	VolumeID  string
	AppID     string
	SizeBytes uint64
	DeletedAt time.Time
}

// MarkVolumeDeleted records that a volume was deleted.
func (d *DB) MarkVolumeDeleted(ctx context.Context, v DeletedVolume) error {
	_, err := d.sql.ExecContext(ctx, `INSERT INTO deleted_volumes (volume_id, app_id, size_bytes, deleted_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (volume_id) DO NOTHING`, v.VolumeID, v.AppID, int64(v.SizeBytes), v.DeletedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("record volume %s as deleted: %w", v.VolumeID, err)
	}
	return nil
}

// UndeleteVolume forgets that a volume was deleted, when a document asks
// for a volume of that id to be present again.
func (d *DB) UndeleteVolume(ctx context.Context, volumeID string) error {
	if _, err := d.sql.ExecContext(ctx, `DELETE FROM deleted_volumes WHERE volume_id = ?`, volumeID); err != nil {
		return fmt.Errorf("forget that volume %s was deleted: %w", volumeID, err)
	}
	return nil
}

// DeletedVolumes returns every deleted volume by id.
func (d *DB) DeletedVolumes(ctx context.Context) (map[string]DeletedVolume, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT volume_id, app_id, size_bytes, deleted_at FROM deleted_volumes`)
	if err != nil {
		return nil, fmt.Errorf("read deleted volumes: %w", err)
	}
	defer rows.Close()
	out := map[string]DeletedVolume{}
	for rows.Next() {
		var v DeletedVolume
		var at int64
		if err := rows.Scan(&v.VolumeID, &v.AppID, &v.SizeBytes, &at); err != nil {
			return nil, fmt.Errorf("read deleted volumes: %w", err)
		}
		v.DeletedAt = time.UnixMilli(at).UTC()
		out[v.VolumeID] = v
	}
	return out, rows.Err()
}

// VolumeFailure is the last failed action on a volume: its kind, the size
// and seed (initialContents digest, "" for none) it asked for, the
// failures of that same action in a row, when the last one was, and the
// sentence the report gives it.
type VolumeFailure struct {
	VolumeID  string
	Kind      string
	SizeBytes uint64
	Seed      string
	Count     int
	At        time.Time
	Message   string
}

// PutVolumeFailure records a volume's last failed action, in place of the
// one before.
func (d *DB) PutVolumeFailure(ctx context.Context, f VolumeFailure) error {
	_, err := d.sql.ExecContext(ctx, `INSERT INTO volume_failures (volume_id, kind, size_bytes, seed, count, failed_at, message) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (volume_id) DO UPDATE SET kind = excluded.kind, size_bytes = excluded.size_bytes, seed = excluded.seed,
		count = excluded.count, failed_at = excluded.failed_at, message = excluded.message`,
		f.VolumeID, f.Kind, int64(f.SizeBytes), f.Seed, f.Count, f.At.UnixMilli(), f.Message)
	if err != nil {
		return fmt.Errorf("record the failure of volume %s: %w", f.VolumeID, err)
	}
	return nil
}

// ClearVolumeFailure forgets a volume's last failure (an action on it
// succeeded).
func (d *DB) ClearVolumeFailure(ctx context.Context, volumeID string) error {
	if _, err := d.sql.ExecContext(ctx, `DELETE FROM volume_failures WHERE volume_id = ?`, volumeID); err != nil {
		return fmt.Errorf("forget the failure of volume %s: %w", volumeID, err)
	}
	return nil
}

// VolumeFailures returns every volume's last failure by id.
func (d *DB) VolumeFailures(ctx context.Context) (map[string]VolumeFailure, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT volume_id, kind, size_bytes, seed, count, failed_at, message FROM volume_failures`)
	if err != nil {
		return nil, fmt.Errorf("read volume failures: %w", err)
	}
	defer rows.Close()
	out := map[string]VolumeFailure{}
	for rows.Next() {
		var f VolumeFailure
		var at int64
		if err := rows.Scan(&f.VolumeID, &f.Kind, &f.SizeBytes, &f.Seed, &f.Count, &at, &f.Message); err != nil {
			return nil, fmt.Errorf("read volume failures: %w", err)
		}
		f.At = time.UnixMilli(at).UTC()
		out[f.VolumeID] = f
	}
	return out, rows.Err()
}

// AppendEvents keeps the events (numbered, each its JSON) and drops the
// oldest beyond keep, in one transaction.
func (d *DB) AppendEvents(ctx context.Context, evs map[uint64][]byte, keep int) error {
	if len(evs) == 0 {
		return nil
	}
	tx, err := d.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keep events: %w", err)
	}
	defer tx.Rollback()
	for seq, b := range evs {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO events (seq, event) VALUES (?, ?)`, int64(seq), b); err != nil {
			return fmt.Errorf("keep events: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM events WHERE seq <= (SELECT MAX(seq) FROM events) - ?`, keep); err != nil {
		return fmt.Errorf("keep events: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep events: %w", err)
	}
	return nil
}

// Events returns the kept events' JSON, oldest first.
func (d *DB) Events(ctx context.Context) ([][]byte, error) {
	rows, err := d.sql.QueryContext(ctx, `SELECT event FROM events ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
