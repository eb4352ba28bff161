package qemu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/guest"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/vmm"
)

// snapshotHeadroom is free space kept beyond a guest's memory size when
// deciding whether a snapshot fits: the state holds device state besides
// RAM, and a full disk hurts everyone on the host.
const snapshotHeadroom = 64 << 20

// ErrNoSpace is returned (wrapped) by Sleep when the snapshot folder lacks
// room for the guest's memory; the guest is left running.
var ErrNoSpace = errors.New("not enough free disk for the snapshot")

// freeBytes is a variable so a test can run out of disk.
var freeBytes = func(dir string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Sleep pauses the guest, migrates its state and memory to
// snapshot_dir/<app>/state, writes the stamp and ends QEMU. On any failure
// before the state is complete the guest is resumed and keeps running.
func (v *VMM) Sleep(ctx context.Context, appID string) error {
	g, err := v.live(appID)
	if err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	q, err := g.monitor()
	if err != nil {
		return fmt.Errorf("sleep %s: %w; it keeps running", appID, err)
	}
	mem := g.rec.MemoryMiB
	if mem <= 0 {
		mem = 256
	}
	dir := v.snapDir(appID)
	if err := os.MkdirAll(dir, perm.Dir); err != nil {
		return fmt.Errorf("sleep %s: %w", appID, err)
	}
	need := uint64(mem)<<20 + snapshotHeadroom
	if free, err := freeBytes(dir); err != nil {
		return fmt.Errorf("sleep %s: measure free disk: %w", appID, err)
	} else if free < need {
		return fmt.Errorf("sleep %s: %w: %d MiB free in %s, %d MiB needed; it keeps running", appID, ErrNoSpace, free>>20, v.cfg.SnapshotDir, need>>20)
	}
	_ = os.Remove(filepath.Join(dir, stampFile))
	tmp := filepath.Join(dir, stateFile+".tmp")
	_ = os.Remove(tmp)
	resume := func(cause error) error {
		_, _ = q.execute(context.WithoutCancel(ctx), "cont", nil)
		_ = os.Remove(tmp)
		return fmt.Errorf("sleep %s: %w; it keeps running", appID, cause)
	}
	if _, err := q.execute(ctx, "stop", nil); err != nil {
		return resume(err)
	}
	// The default bandwidth cap (128 MiB/s) is for live migration over a
	// network; a file on local disk takes what it can.
	_, _ = q.execute(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": int64(8) << 30})
	if _, err := q.execute(ctx, "migrate", map[string]any{"uri": "exec:cat > " + shellQuote(tmp)}); err != nil {
		return resume(err)
	}
	if err := waitMigration(ctx, q); err != nil {
		return resume(err)
	}
	// The guest's memory is the tenant's: root alone reads it.
	if err := os.Chmod(tmp, perm.Secret); err != nil {
		return resume(err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return resume(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return resume(err)
	}
	stamp := Stamp{
		AppID: appID, DeploymentID: g.pf.DeploymentID, GuestImage: g.rec.GuestImage, BootID: v.bootID,
		Slot: g.pf.Slot, Machine: g.rec.Machine, StateSize: st.Size(), SavedAtMs: time.Now().UnixMilli(),
	}
	if err := writeStamp(dir, stamp); err != nil {
		_ = os.Remove(filepath.Join(dir, stateFile))
		return resume(err)
	}
	// The state is saved: end the process. quit is immediate for a paused
	// machine; a signal is the fallback.
	qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, _ = q.execute(qctx, "quit", nil)
	cancel()
	if !waitDone(g.done, 5*time.Second) {
		_ = v.signal(g, unix.SIGKILL)
		waitDone(g.done, 5*time.Second)
	}
	v.forget(appID, g)
	return nil
}

func waitMigration(ctx context.Context, q *qmp) error {
	for {
		b, err := q.execute(ctx, "query-migrate", nil)
		if err != nil {
			return err
		}
		var s struct {
			Status    string `json:"status"`
			ErrorDesc string `json:"error-desc"`
		}
		_ = json.Unmarshal(b, &s)
		switch s.Status {
		case "completed":
			return nil
		case "failed", "cancelled":
			return fmt.Errorf("saving the guest's state %s: %s", s.Status, s.ErrorDesc)
		}
		select {
		case <-ctx.Done():
			_, _ = q.execute(context.WithoutCancel(ctx), "migrate_cancel", nil)
			return fmt.Errorf("saving the guest's state: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Wake restores the app's snapshot when its stamp matches spec and boots
// spec cold otherwise (or when the restore fails). The snapshot is deleted
// once the guest runs again: its memory no longer matches the volume.
func (v *VMM) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if err := v.claim(spec.AppID); err != nil {
		return vmm.Status{}, err
	}
	g, err := v.restore(ctx, spec)
	if err != nil {
		// Any reason not to restore is a reason to boot cold.
		_ = v.Discard(ctx, spec.AppID)
		if g, err = v.launch(ctx, spec, ""); err != nil {
			v.release(spec.AppID)
			return vmm.Status{}, err
		}
	}
	v.mu.Lock()
	v.guests[spec.AppID] = g
	v.mu.Unlock()
	return g.status(), nil
}

// WakeMismatch says why the app's snapshot would not be restored into
// spec, or "" when it would. (ours)
func (v *VMM) WakeMismatch(ctx context.Context, spec vmm.Spec) string {
	stamp, err := readStamp(v.snapDir(spec.AppID))
	if err != nil {
		return "no snapshot"
	}
	m, err := v.machineFor(ctx, spec)
	if err != nil {
		return err.Error()
	}
	return stamp.Mismatch(Stamp{AppID: spec.AppID, DeploymentID: spec.DeploymentID, GuestImage: v.cfg.Image.Version, BootID: v.bootID, Slot: spec.Slot, Machine: m.Hash()})
}

func (v *VMM) restore(ctx context.Context, spec vmm.Spec) (*vmGuest, error) {
	dir := v.snapDir(spec.AppID)
	if why := v.WakeMismatch(ctx, spec); why != "" {
		return nil, fmt.Errorf("snapshot of %s not restorable: %s", spec.AppID, why)
	}
	state := filepath.Join(dir, stateFile)
	if _, err := os.Stat(state); err != nil {
		return nil, fmt.Errorf("restore %s: its saved state: %w", spec.AppID, err)
	}
	g, err := v.launch(ctx, spec, state)
	if err != nil {
		return nil, err
	}
	abort := func(err error) (*vmGuest, error) {
		_ = v.signal(g, unix.SIGKILL)
		waitDone(g.done, 5*time.Second)
		g.close()
		return nil, fmt.Errorf("restore %s: %w", spec.AppID, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		st, err := g.qmp.status(rctx)
		if err != nil {
			return abort(err)
		}
		if st == "paused" || st == "postmigrate" {
			break
		}
		if st != "inmigrate" && st != "prelaunch" {
			return abort(fmt.Errorf("guest is %s after loading its state", st))
		}
		select {
		case <-rctx.Done():
			return abort(rctx.Err())
		case <-g.done:
			return abort(errors.New("QEMU exited while loading the state"))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if _, err := g.qmp.execute(rctx, "cont", nil); err != nil {
		return abort(err)
	}
	_ = v.Discard(ctx, spec.AppID)
	// The guest's clock stood still while it slept.
	go func() {
		tctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = g.ctl.request(tctx, guest.Message{Kind: guest.KindSetTime, UnixMs: time.Now().UnixMilli()})
	}()
	return g, nil
}

// Discard deletes the app's snapshot, if any.
func (v *VMM) Discard(ctx context.Context, appID string) error {
	if err := os.RemoveAll(v.snapDir(appID)); err != nil {
		return fmt.Errorf("discard snapshot of %s: %w", appID, err)
	}
	return nil
}

// HasSnapshot reports whether a complete snapshot of the app is kept. (ours)
func (v *VMM) HasSnapshot(appID string) bool {
	_, err := readStamp(v.snapDir(appID))
	return err == nil
}

// removeStaleSnapshots deletes snapshots taken under an earlier host boot
// (and half-written ones): nothing could restore them.
func (v *VMM) removeStaleSnapshots() {
	entries, _ := os.ReadDir(v.cfg.SnapshotDir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(v.cfg.SnapshotDir, e.Name())
		if s, err := readStamp(dir); err != nil || s.BootID != v.bootID {
			_ = os.RemoveAll(dir)
		}
	}
}
