package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

// DefaultFreezeTimeout bounds how long a guest's filesystem stays frozen
// for one copy when the host configuration says nothing.
const DefaultFreezeTimeout = 10 * time.Second

// thawTimeout bounds the thaw request itself, which runs on a context of
// its own: the copy's may be what ended.
const thawTimeout = 10 * time.Second

// SnapshotStats says what a snapshot did.
type SnapshotStats struct {
	CopyStats
	// Frozen is how long the guest's filesystem was frozen (0 when the
	// volume was at rest).
	Frozen time.Duration
}

// Snapshot copies vol's file to the new file dst, sparsely, consistent: a
// volume a running guest has mounted is frozen for the copy and thawed
// after it, whatever happened in between. The freeze lasts at most bound
// (DefaultFreezeTimeout when 0): the freeze request carries the bound as
// its context's deadline, so the guest thaws by itself once it passes even
// if no thaw ever comes (the daemon died), and a copy still running then
// is abandoned and fails.
func Snapshot(ctx context.Context, vol Volume, dst string, bound time.Duration) (SnapshotStats, error) {
	if bound <= 0 {
		bound = DefaultFreezeTimeout
	}
	// One freeze of a volume at a time from this process: a second
	// FIFREEZE would be refused, and its thaw would end the first one's.
	unlock := lockVolume(vol.Path)
	defer unlock()
	if vol.Freezer == nil {
		st, err := CopySparse(ctx, vol.Path, dst)
		if err == nil && vol.AtRest != nil {
			if err = vol.AtRest(ctx); err != nil {
				os.Remove(dst)
			}
		}
		if err != nil {
			return SnapshotStats{CopyStats: st}, fmt.Errorf("copy volume %s: %w", vol.ID, err)
		}
		return SnapshotStats{CopyStats: st}, nil
	}
	fctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	start := time.Now()
	if err := vol.Freezer.Freeze(fctx); err != nil {
		// A freeze that failed on our side may still have reached the
		// guest: thaw (thawing a thawed filesystem is a no-op). Not after
		// one that certainly froze nothing: the volume may be frozen by
		// someone else (a sleep), whose freeze the thaw would end.
		if !errors.Is(err, vmm.ErrFreezeRefused) {
			thaw(ctx, vol)
		}
		return SnapshotStats{}, fmt.Errorf("freeze the filesystem of volume %s in its guest: %w", vol.ID, err)
	}
	st, cerr := CopySparse(fctx, vol.Path, dst)
	// A thaw that fails is not the copy's failure: the copy is good, and
	// the guest thaws by itself at the bound.
	_ = thaw(ctx, vol)
	out := SnapshotStats{CopyStats: st, Frozen: time.Since(start)}
	switch {
	case cerr != nil && errors.Is(fctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return out, fmt.Errorf("copy volume %s: the copy took longer than the %s its guest may stay frozen (raise checkpoints.freeze_timeout_ms): %w", vol.ID, bound, cerr)
	case cerr != nil:
		return out, fmt.Errorf("copy volume %s: %w", vol.ID, cerr)
	}
	return out, nil
}

var (
	volumesMu sync.Mutex
	volumes   = map[string]*sync.Mutex{}
)

// lockVolume serialises snapshots of the volume file at path.
func lockVolume(path string) (unlock func()) {
	volumesMu.Lock()
	m := volumes[path]
	if m == nil {
		m = &sync.Mutex{}
		volumes[path] = m
	}
	volumesMu.Unlock()
	m.Lock()
	return m.Unlock
}

func thaw(ctx context.Context, vol Volume) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), thawTimeout)
	defer cancel()
	return vol.Freezer.Thaw(tctx)
}
