package qemu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/store"
)

// A snapshot travels through a store as two objects under one prefix: its
// state, then its stamp. The stamp goes last, so a reader that finds it
// finds a whole state beside it (S3 shows an object only once it is whole).
const (
	TravelStateObject = "state"
	TravelStampObject = "stamp.json"
)

// TravelPrefix is where the memory snapshot that fits the volume
// checkpoint at checkpointKey travels: beside it, so whatever names the
// checkpoint (a volume's initialContents) names the snapshot too.
func TravelPrefix(checkpointKey string) string { return checkpointKey + ".vm/" }

// ErrNoSnapshot is returned (wrapped) by PutSnapshot when the app has no
// snapshot, and by FetchSnapshot when the store has none under the prefix.
var ErrNoSnapshot = errors.New("no snapshot")

// ErrSnapshotChanged is returned (wrapped) by PutSnapshot when the app's
// snapshot is not the one the caller named: it woke, or slept again.
var ErrSnapshotChanged = errors.New("the snapshot changed")

// SnapshotSavedAt is when the app's snapshot was saved (Unix ms), or 0
// when it has none. A caller that copies the app's volume reads it before
// the copy and hands it to PutSnapshot, which refuses to send a snapshot
// saved at any other time: a copy of the volume fits only the memory of the
// sleep it was taken after. (ours)
func (v *VMM) SnapshotSavedAt(appID string) int64 {
	s, err := readStamp(v.snapDir(appID))
	if err != nil {
		return 0
	}
	return s.SavedAtMs
}

// PutSnapshot uploads the app's snapshot to st under prefix and returns the
// bytes sent. savedAtMs names the snapshot (SnapshotSavedAt); another one
// is refused with ErrSnapshotChanged. The snapshot is kept here: the app
// still wakes on this host from it. (ours)
func (v *VMM) PutSnapshot(ctx context.Context, appID string, savedAtMs int64, st store.Store, prefix string) (int64, error) {
	dir := v.snapDir(appID)
	// The state is opened before the stamp is read: a sleep removes the
	// stamp before it replaces the state, so a stamp still saved at
	// savedAtMs after the open means the open file is that sleep's state.
	f, err := os.Open(filepath.Join(dir, stateFile))
	if err != nil {
		return 0, fmt.Errorf("send the snapshot of %s: %w: %w", appID, ErrNoSnapshot, err)
	}
	defer f.Close()
	stamp, err := readStamp(dir)
	if err != nil {
		return 0, fmt.Errorf("send the snapshot of %s: %w: %w", appID, ErrNoSnapshot, err)
	}
	if stamp.SavedAtMs != savedAtMs {
		return 0, fmt.Errorf("send the snapshot of %s: %w (saved at %d ms, not %d)", appID, ErrSnapshotChanged, stamp.SavedAtMs, savedAtMs)
	}
	b, _ := json.MarshalIndent(stamp, "", "  ")
	if err := st.Put(ctx, prefix+TravelStateObject, f, stamp.StateSize); err != nil {
		return 0, fmt.Errorf("send the snapshot of %s: its state: %w", appID, err)
	}
	if err := st.Put(ctx, prefix+TravelStampObject, bytes.NewReader(b), int64(len(b))); err != nil {
		return 0, fmt.Errorf("send the snapshot of %s: its stamp: %w", appID, err)
	}
	// A wake between the open and now discarded the snapshot; what went
	// up is still the state of that sleep, whole, and fits the volume
	// copied after it.
	return stamp.StateSize + int64(len(b)), nil
}

// FetchSnapshot downloads the snapshot st holds under prefix into the app's
// snapshot folder, so the app's next Wake restores it, and returns its
// stamp and the bytes fetched. A snapshot this host could never restore
// (another QEMU, machine, guest kernel or image, or another app's) is
// refused before its state is fetched, with a sentence that says why (an
// error wrapping ErrNotRestorable); ErrNoSnapshot when the store has none.
// Any snapshot the app had here is replaced. (ours)
func (v *VMM) FetchSnapshot(ctx context.Context, appID string, st store.Store, prefix string) (Stamp, int64, error) {
	rc, _, err := st.Get(ctx, prefix+TravelStampObject)
	if errors.Is(err, store.ErrNotFound) {
		return Stamp{}, 0, fmt.Errorf("fetch a snapshot of %s: %w under %s", appID, ErrNoSnapshot, prefix)
	}
	if err != nil {
		return Stamp{}, 0, fmt.Errorf("fetch the snapshot of %s: its stamp: %w", appID, err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, 1<<20))
	rc.Close()
	if err != nil {
		return Stamp{}, 0, fmt.Errorf("fetch the snapshot of %s: its stamp: %w", appID, err)
	}
	var stamp Stamp
	if err := json.Unmarshal(b, &stamp); err != nil {
		return Stamp{}, 0, fmt.Errorf("fetch the snapshot of %s: its stamp: %w", appID, err)
	}
	if why := v.hostMismatch(ctx, appID, stamp); why != "" {
		return Stamp{}, int64(len(b)), fmt.Errorf("fetch the snapshot of %s: %w", appID, notRestorable(why))
	}
	dir := v.snapDir(appID)
	if err := v.Discard(ctx, appID); err != nil {
		return Stamp{}, int64(len(b)), err
	}
	if err := os.MkdirAll(dir, perm.Dir); err != nil {
		return Stamp{}, int64(len(b)), fmt.Errorf("fetch the snapshot of %s: %w", appID, err)
	}
	n, err := v.fetchState(ctx, st, prefix+TravelStateObject, dir, stamp.StateSize)
	n += int64(len(b))
	if err != nil {
		_ = v.Discard(ctx, appID)
		return Stamp{}, n, fmt.Errorf("fetch the snapshot of %s: its state: %w", appID, err)
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, stampFile), b, 0o640); err != nil {
		_ = v.Discard(ctx, appID)
		return Stamp{}, n, fmt.Errorf("fetch the snapshot of %s: %w", appID, err)
	}
	return stamp, n, nil
}

// fetchState writes object key of st to dir's state file, whole or not at
// all, and checks it is size bytes.
func (v *VMM) fetchState(ctx context.Context, st store.Store, key, dir string, size int64) (int64, error) {
	rc, _, err := st.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	tmp := filepath.Join(dir, stateFile+".tmp")
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm.Secret)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, rc)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes, and its stamp says %d", n, size)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, stateFile))
	}
	if err != nil {
		_ = os.Remove(tmp)
	}
	return n, err
}

// hostMismatch is Stamp.Mismatch of what a snapshot must match of this host
// alone, before any spec is known: its format, app, QEMU, machine type,
// guest kernel and image.
func (v *VMM) hostMismatch(ctx context.Context, appID string, s Stamp) string {
	want := s
	want.Format, want.AppID, want.GuestImage = stampFormat, appID, v.cfg.Image.Version
	want.QEMU, want.GuestKernel = v.version, v.cfg.Image.KernelRelease
	want.MachineType = machine{Accel: v.Accel(ctx)}.machineType()
	return s.Mismatch(want)
}

// Travel is the daemon's way to send an app's snapshot beside a checkpoint
// of its volume and to fetch it when a volume is restored from one
// (daemon.Travel): the VMM's snapshots, the checkpoint store they go up
// to, and the artifact store a restore reads from (one bucket on a fleet
// whose hosts share one, docs/fleet.md).
type Travel struct {
	VMM *VMM
	// Checkpoints is where this host's checkpoints go; Artifacts where a
	// volume's initialContents are read from.
	Checkpoints, Artifacts store.Store
}

// SavedAt implements daemon.Travel: SnapshotSavedAt.
func (t Travel) SavedAt(appID string) int64 { return t.VMM.SnapshotSavedAt(appID) }

// Send implements daemon.Travel: the snapshot saved at savedAtMs goes up
// beside the checkpoint at checkpointKey. An app with no snapshot sends
// nothing (0, nil).
func (t Travel) Send(ctx context.Context, appID string, savedAtMs int64, checkpointKey string) (int64, error) {
	n, err := t.VMM.PutSnapshot(ctx, appID, savedAtMs, t.Checkpoints, TravelPrefix(checkpointKey))
	if errors.Is(err, ErrNoSnapshot) {
		return 0, nil
	}
	return n, err
}

// Fetch implements daemon.Travel: the snapshot beside the checkpoint at
// objectKey becomes the app's, and its deployment is returned. None there
// is "" and no error; one this host could never restore is an error
// wrapping ErrNotRestorable, with the stamp's sentence.
func (t Travel) Fetch(ctx context.Context, appID, objectKey string) (deployment string, n int64, err error) {
	s, n, err := t.VMM.FetchSnapshot(ctx, appID, t.Artifacts, TravelPrefix(objectKey))
	if errors.Is(err, ErrNoSnapshot) {
		return "", n, nil
	}
	return s.DeploymentID, n, err
}

// Forget implements daemon.Travel: the snapshot beside the checkpoint at
// checkpointKey, if any, is deleted (its stamp first, so a reader never
// finds a stamp without its state).
func (t Travel) Forget(ctx context.Context, checkpointKey string) error {
	prefix := TravelPrefix(checkpointKey)
	for _, name := range []string{TravelStampObject, TravelStateObject} {
		if err := t.Checkpoints.Delete(ctx, prefix+name); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("delete the snapshot beside %s: %w", checkpointKey, err)
		}
	}
	return nil
}
