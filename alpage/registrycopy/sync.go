package registrycopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/nns/registrypb"
)

// Source answers get_certified_changes_since, verified under the verifier
// and with chunked values joined; nns.RegistryClient satisfies it.
type Source interface {
	GetCertifiedChangesSince(ctx context.Context, version uint64, v *certificate.Verifier) (*nns.CertifiedChanges, error)
}

// ErrBehind: the registry's latest version is older than the copy's, so the
// copy is not of this registry's history.
var ErrBehind = errors.New("the registry is behind the copy")

// Result says what a Sync did.
type Result struct {
	From, To uint64 // the copy's version before and after
	Deltas   int    // versions fetched and applied
	Requests int    // get_certified_changes_since calls
	// Rebuilt is set when the copy was discarded and rebuilt from version
	// 0; Reason says why.
	Rebuilt bool
	Reason  string
}

// Sync opens the copy in dir and brings it up to the registry's latest
// version. A reply that does not verify, or a file that is not a copy,
// discards the copy and rebuilds it from version 0, saying so on log; when
// the rebuild fails too, Sync fails and the copy is left empty.
//
// A file another run has open is discarded only once that run has closed
// it: Sync waits up to LockWait for that, then fails with ErrInUse.
func Sync(ctx context.Context, dir string, src Source, v *certificate.Verifier, log io.Writer) (*Copy, Result, error) {
	return syncAs(ctx, dir, layout{schema: schemaVersion, wait: LockWait}, src, v, log)
}

// syncAs is Sync for a run that expects the layout l.
func syncAs(ctx context.Context, dir string, l layout, src Source, v *certificate.Verifier, log io.Writer) (*Copy, Result, error) {
	// A file that is not a copy we can read (damaged, another layout) is
	// discarded and rebuilt, unless another run already did.
	c, why, err := discardAndOpen(ctx, dir, l, log)
	if why != nil {
		fmt.Fprintf(log, "registry copy: %v; discarded it and rebuilding it from version 0\n", why)
	}
	if err != nil {
		return nil, Result{}, err
	}
	if why != nil {
		res, err := c.Update(ctx, src, v)
		res.Rebuilt, res.Reason = true, "the file could not be read"
		if err != nil {
			c.Close()
			return nil, res, err
		}
		return c, res, nil
	}
	return update(ctx, c, src, v, log)
}

// update brings the open copy c up to date, rebuilding it from version 0
// when a reply cannot be trusted.
func update(ctx context.Context, c *Copy, src Source, v *certificate.Verifier, log io.Writer) (*Copy, Result, error) {
	res, err := c.Update(ctx, src, v)
	if err == nil || !rebuildable(err) {
		if err != nil {
			c.Close()
			return nil, res, err
		}
		return c, res, nil
	}
	reason := err.Error()
	fmt.Fprintf(log, "registry copy: %s; discarding the copy at version %d and rebuilding it from version 0\n", reason, res.To)
	if derr := c.Reset(ctx); derr != nil {
		c.Close()
		return nil, res, derr
	}
	again, err := c.Update(ctx, src, v)
	again.Requests += res.Requests
	again.Rebuilt, again.Reason = true, reason
	if err != nil {
		c.Close()
		return nil, again, fmt.Errorf("registry copy: rebuild: %w", err)
	}
	return c, again, nil
}

// rebuildable says whether err means the copy, or a reply meant for it,
// cannot be trusted (rather than that the network failed).
func rebuildable(err error) bool {
	return errors.Is(err, nns.ErrNotCertified) || errors.Is(err, ErrBehind)
}

// Reset empties the copy back to version 0.
func (c *Copy) Reset(ctx context.Context) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("registry copy: reset: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if _, err := tx.ExecContext(ctx, `DELETE FROM entries`); err != nil {
		return fmt.Errorf("registry copy: reset: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = '0' WHERE name = 'version'`); err != nil {
		return fmt.Errorf("registry copy: reset: %w", err)
	}
	return tx.Commit()
}

// Update fetches and applies every version after the copy's, one verified
// reply per transaction, until the copy is at the registry's latest.
func (c *Copy) Update(ctx context.Context, src Source, v *certificate.Verifier) (Result, error) {
	since, err := c.Version(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{From: since, To: since}
	for {
		changes, err := src.GetCertifiedChangesSince(ctx, since, v)
		res.Requests++
		if err != nil {
			return res, err
		}
		if err := checkNotBehind(since, changes); err != nil {
			return res, fmt.Errorf("get_certified_changes_since %d: %w", since, err)
		}
		applied, now, err := c.apply(ctx, since, changes.Deltas)
		if err != nil {
			return res, err
		}
		res.Deltas += applied
		res.To = now
		if now >= changes.LatestVersion {
			return res, nil
		}
		since = now
	}
}

// checkNotBehind refuses a reply whose registry is older than the copy:
// the copy is then not of this registry's history. (That the deltas follow
// on from since without a gap, nns checks for every reader: a reply that
// does not is an nns.ErrInvalidDeltas, which is an nns.ErrNotCertified.)
func checkNotBehind(since uint64, ch *nns.CertifiedChanges) error {
	if ch.LatestVersion < since {
		return fmt.Errorf("%w: its latest version is %d, the copy's %d", ErrBehind, ch.LatestVersion, since)
	}
	return nil
}

// apply writes the deltas after since in one transaction and returns how
// many it applied and the copy's version after. Another process may have
// applied some of them meanwhile: those are skipped.
func (c *Copy) apply(ctx context.Context, since uint64, deltas []nns.CertifiedDelta) (int, uint64, error) {
	tx, err := c.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock first
	if err != nil {
		return 0, 0, fmt.Errorf("registry copy: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	now, err := versionOf(ctx, tx)
	if err != nil {
		return 0, 0, err
	}
	if now < since {
		return 0, 0, fmt.Errorf("registry copy: went back from %d to %d while updating (reset by another run?)", since, now)
	}
	ins, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO entries (key, version, value) VALUES (?, ?, ?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("registry copy: %w", err)
	}
	defer ins.Close()
	applied := 0
	for _, d := range deltas {
		if d.Version <= now {
			continue // another run applied it first
		}
		for _, m := range d.Mutations {
			value, err := valueOf(m)
			if err != nil {
				return 0, 0, fmt.Errorf("registry copy: version %d: %s: %w", d.Version, m.Key, err)
			}
			if _, err := ins.ExecContext(ctx, string(m.Key), int64(d.Version), value); err != nil {
				return 0, 0, fmt.Errorf("registry copy: write %s@%d: %w", m.Key, d.Version, err)
			}
		}
		now = d.Version
		applied++
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE name = 'version'`, strconv.FormatUint(now, 10)); err != nil {
		return 0, 0, fmt.Errorf("registry copy: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("registry copy: commit: %w", err)
	}
	return applied, now, nil
}

// valueOf is what a mutation leaves under its key: nil for a deletion, the
// value (already joined from its chunks) otherwise.
func valueOf(m *registrypb.HighCapacityRegistryMutation) ([]byte, error) {
	if m.MutationType == registrypb.RegistryMutation_DELETE {
		return nil, nil
	}
	if m.GetLargeValueChunkKeys() != nil {
		return nil, errors.New("a chunked value that was not joined")
	}
	if v := m.GetValue(); v != nil {
		return v, nil
	}
	return []byte{}, nil // present and empty
}
