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
	"alpnib.dev/internal/progress"
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

// RefusedError is a get_certified_changes_since reply the copy does not
// take: it does not verify, or its registry is behind the copy (a replayed
// older reply is both). The copy is left as it was: versions only go
// forward, and a copy is never discarded for what an endpoint answered.
type RefusedError struct {
	// Since is the version asked for, Version the copy's (unchanged).
	Since, Version uint64
	// Latest is the reply's current_version, when it could be read.
	Latest uint64
	Err    error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("registry copy: the reply to get_certified_changes_since %d is refused, so the copy stays at version %d: %v; the endpoint may be replaying an older answer or not be the network this copy is of: try again later, or against another endpoint", e.Since, e.Version, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// Sync opens the copy in dir and brings it up to the registry's latest
// version. A file that is not a copy (damaged, another layout) is
// discarded and rebuilt from version 0, saying so on log. A reply that
// does not verify, or is behind the copy, is a *RefusedError and leaves the
// copy as it is.
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
	res, err := c.Update(ctx, src, v, log)
	if why != nil {
		res.Rebuilt, res.Reason = true, "the file could not be read"
	}
	if err != nil {
		c.Close()
		return nil, res, err
	}
	return c, res, nil
}

// Update fetches and applies every version after the copy's, one verified
// reply per transaction, until the copy is at the registry's latest. An
// update that takes more than one reply (a cold copy of mainnet takes
// hundreds) says how it is getting on, on progress (nil: quiet).
func (c *Copy) Update(ctx context.Context, src Source, v *certificate.Verifier, out io.Writer) (Result, error) {
	since, err := c.Version(ctx)
	if err != nil {
		return Result{}, err
	}
	res := Result{From: since, To: since}
	var meter *progress.Meter // made once a second reply is needed
	for {
		changes, err := src.GetCertifiedChangesSince(ctx, since, v)
		res.Requests++
		if errors.Is(err, nns.ErrNotCertified) {
			return res, &RefusedError{Since: since, Version: since, Err: err}
		}
		if err != nil {
			return res, err
		}
		if err := checkNotBehind(since, changes); err != nil {
			return res, &RefusedError{Since: since, Version: since, Latest: changes.LatestVersion, Err: err}
		}
		applied, now, err := c.apply(ctx, since, changes.Deltas)
		if err != nil {
			return res, err
		}
		res.Deltas += applied
		res.To = now
		if meter == nil && now < changes.LatestVersion {
			meter = progress.New(out, "registry copy: syncing", "versions", 0)
		}
		meter.SetTotal(int64(changes.LatestVersion - res.From))
		meter.Add(int64(now - since))
		if now >= changes.LatestVersion {
			meter.Done()
			return res, nil
		}
		since = now
	}
}

// checkNotBehind refuses a reply whose registry is older than the copy: a
// replayed older reply, or a registry not of the copy's history. (That the deltas follow
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
