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
	"alpnib.dev/nibrunner/jail"
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

// sleepFreezeBound is the freeze a sleep asks the guest's init for: the
// init thaws by itself once that much of the guest's time has passed
// without a thaw. The guest's monotonic clock stands still while it is
// paused and while it sleeps (QEMU stops the guest's ticks at `stop` and
// migrates them; kvmclock likewise), so the bound is spent only while the
// guest runs: from the freeze to `stop`, and after a wake from `cont` to
// the wake's thaw. It is a variable so a test can make the init's own thaw
// too late to be the one it sees.
var sleepFreezeBound = 60 * time.Second

// sleepStopBudget is how long, in the host's time from the freeze request,
// the guest may take to be frozen and stopped. Past it the init may have
// thawed by itself before the stop (a TCG guest's clock runs at the
// host's TSC rate, which may be faster than the one the guest was told),
// so the snapshot would not hold a frozen filesystem and the sleep is
// given up. A quarter of the bound leaves room for a guest clock four
// times the host's.
func sleepStopBudget() time.Duration { return sleepFreezeBound / 4 }

// ErrFreeze is returned (wrapped) by Sleep when the guest's init did not
// freeze the app's volume; the guest is left running.
var ErrFreeze = errors.New("its volume could not be frozen")

// Sleep freezes the app's volume through the guest's init (FIFREEZE, so
// the volume file holds everything the tenant wrote), pauses the guest,
// migrates its state and memory to snapshot_dir/<app>/state, writes the
// stamp and ends QEMU. The snapshot holds a frozen filesystem: Wake thaws
// it right after it resumes the guest. A freeze that fails refuses the
// sleep, and on any failure before the state is complete the guest is
// resumed, its volume thawed, and it keeps running.
func (v *VMM) Sleep(ctx context.Context, appID string) error {
	return v.sleep(ctx, appID, true)
}

// sleep is Sleep; freeze false is the sleep of the builds before the
// freeze, kept for the benchmark that measures what the freeze costs.
func (v *VMM) sleep(ctx context.Context, appID string, freeze bool) error {
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
	frozen := false
	resume := func(cause error) error {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _ = q.execute(rctx, "cont", nil)
		_ = os.Remove(tmp)
		if frozen {
			if err := g.thaw(rctx); err != nil {
				return fmt.Errorf("sleep %s: %w; it keeps running, but its volume is still frozen (%v): its init thaws it by itself within %s", appID, cause, err, sleepFreezeBound)
			}
		}
		return fmt.Errorf("sleep %s: %w; it keeps running", appID, cause)
	}
	asked := time.Now()
	if freeze {
		if err := v.freezeForSleep(ctx, g); err != nil {
			return fmt.Errorf("sleep %s: %w; it keeps running", appID, err)
		}
		frozen = true
	}
	if _, err := q.execute(ctx, "stop", nil); err != nil {
		return resume(err)
	}
	if took := time.Since(asked); freeze && took >= sleepStopBudget() {
		return resume(fmt.Errorf("the guest stopped %s after its volume's freeze was asked, past the %s within which it is sure to be still frozen (the init thaws by itself after %s of the guest's time); the sleep is tried again later", took.Round(time.Millisecond), sleepStopBudget(), sleepFreezeBound))
	}
	// The default bandwidth cap (128 MiB/s) is for live migration over a
	// network; a file on local disk takes what it can.
	_, _ = q.execute(ctx, "migrate-set-parameters", map[string]any{"max-bandwidth": int64(8) << 30})
	// The state file is root's (the guest's memory is the tenant's): QEMU,
	// which may neither open it nor spawn a writer, is handed it open.
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm.Secret)
	if err != nil {
		return resume(err)
	}
	defer out.Close()
	// The state goes through the page cache, which charges the guest's
	// cgroup a second copy of its memory until written back.
	lim := jail.Limits{MemoryMax: g.rec.MemoryLimit}
	lower := func() {}
	if lim.MemoryMax > 0 {
		if err := v.cgroups.SetMemory(appID, lim.WhileSnapshotting(mem)); err != nil {
			return resume(err)
		}
		lower = func() { _ = v.cgroups.SetMemory(appID, lim) }
	}
	if err := q.sendFile(ctx, "snapshot", out); err != nil {
		lower()
		return resume(err)
	}
	if _, err := q.execute(ctx, "migrate", map[string]any{"uri": "fd:snapshot"}); err != nil {
		_, _ = q.execute(context.WithoutCancel(ctx), "closefd", map[string]any{"fdname": "snapshot"})
		lower()
		return resume(err)
	}
	if err := waitMigration(ctx, q); err != nil {
		lower()
		return resume(err)
	}
	if err := out.Close(); err != nil {
		lower()
		return resume(err)
	}
	st, err := os.Stat(tmp)
	if err != nil {
		return resume(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stateFile)); err != nil {
		return resume(err)
	}
	// The stamp is what the guest booted under (a guest adopted from a
	// build before format 2 has none, and is refused at its wake).
	stamp := g.rec.Stamp
	stamp.BootID, stamp.StateSize, stamp.SavedAtMs = v.bootID, st.Size(), time.Now().UnixMilli()
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

// freezeForSleep asks the guest's init to freeze the app's volume for
// sleepFreezeBound, waiting for its answer no longer than the stop budget.
// A refusal (the init's FIFREEZE failed, or a checkpoint of this process
// holds the volume frozen) is left as it is; a freeze that went unanswered
// may still happen, so a thaw is sent after it (the init answers requests
// in order).
func (v *VMM) freezeForSleep(ctx context.Context, g *vmGuest) error {
	fctx, cancel := context.WithTimeout(ctx, sleepStopBudget())
	defer cancel()
	err := g.freeze(fctx, sleepFreezeBound.Milliseconds())
	if err == nil {
		return nil
	}
	if !errors.Is(err, vmm.ErrFreezeRefused) {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = g.thaw(tctx)
	}
	return fmt.Errorf("%w: %w (a sleep without the freeze would leave the tenant's latest writes in the memory snapshot only, so it is refused)", ErrFreeze, err)
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
// spec cold otherwise (or when the restore fails). A restored guest is
// resumed, its clock set and its volume thawed (Sleep froze it) before
// Wake returns; a guest whose init does not answer the thaw is ended and
// booted cold, on a volume that is as the freeze left it. The snapshot is
// deleted once the guest runs again: its memory no longer matches the
// volume. A wake that ctx cuts short boots nothing and keeps the snapshot.
func (v *VMM) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	if err := v.claim(spec.AppID); err != nil {
		return vmm.Status{}, err
	}
	g, err := v.restore(ctx, spec)
	if err != nil && ctx.Err() != nil {
		// Cut short (the daemon closing, the caller's deadline): nothing
		// was learnt of the snapshot, which is kept for the next wake.
		v.release(spec.AppID)
		return vmm.Status{}, fmt.Errorf("wake %s: %w", spec.AppID, err)
	}
	why := ""
	if err != nil {
		// Any other reason not to restore is a reason to boot cold.
		why = err.Error()
		if m := notRestorable(""); errors.As(err, &m) {
			why = string(m)
		}
		_ = v.Discard(ctx, spec.AppID)
		if g, err = v.launch(ctx, spec, ""); err != nil {
			v.release(spec.AppID)
			return vmm.Status{}, err
		}
	}
	v.mu.Lock()
	v.guests[spec.AppID] = g
	v.mu.Unlock()
	st := g.status()
	st.WokenCold = why
	return st, nil
}

// ErrNotRestorable is wrapped by the errors that say a snapshot's stamp
// does not fit this host or the guest about to wake.
var ErrNotRestorable = errors.New("the snapshot cannot be restored here")

// notRestorable is why a snapshot's stamp does not fit the guest about to
// wake (Stamp.Mismatch's sentence); it is ErrNotRestorable.
type notRestorable string

func (e notRestorable) Error() string        { return string(e) }
func (e notRestorable) Is(target error) bool { return target == ErrNotRestorable }

// WakeMismatch says why the app's snapshot would not be restored into
// spec, or "" when it would. (ours)
func (v *VMM) WakeMismatch(ctx context.Context, spec vmm.Spec) string {
	stamp, err := readStamp(v.snapDir(spec.AppID))
	if err != nil {
		return "there is no snapshot"
	}
	m, err := v.machineFor(ctx, spec)
	if err != nil {
		return err.Error()
	}
	return stamp.Mismatch(v.stampOf(m))
}

func (v *VMM) restore(ctx context.Context, spec vmm.Spec) (*vmGuest, error) {
	dir := v.snapDir(spec.AppID)
	if why := v.WakeMismatch(ctx, spec); why != "" {
		return nil, fmt.Errorf("snapshot of %s not restorable: %w", spec.AppID, notRestorable(why))
	}
	stamp, err := readStamp(dir)
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", spec.AppID, err)
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
	// The guest's clock stood still while it slept; set it before the
	// thaw lets the tenant's writes go on, so they carry today's times.
	// Each has its own time, so a slow clock answer cannot leave the thaw
	// none and cost the tenant its memory.
	sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
	_, _ = g.ctl.request(sctx, guest.Message{Kind: guest.KindSetTime, UnixMs: time.Now().UnixMilli()})
	scancel()
	// The guest holds the network it slept with; it may wake in another
	// slot or on another host. It is told the one it has now (on a wake
	// where it slept, the same one: the init's answer is then a no-op
	// bar forgetting its neighbours, which costs one ARP), before the
	// thaw lets the tenant go on.
	now := g.rec.Stamp.Network
	nctx, ncancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = g.ctl.request(nctx, guest.Message{Kind: guest.KindSetNetwork, Network: &guest.Network{IP: now.IP, Gateway: now.Gateway, DNS: now.DNS}})
	ncancel()
	if err != nil {
		return abort(fmt.Errorf("tell the guest its network (%s, slept with %s): %w", orUnknown(now.IP), orUnknown(stamp.Network.IP), err))
	}
	// Its volume was frozen for the sleep (a snapshot of an earlier build
	// was not, and the init leaves an unfrozen volume as it is).
	tctx, tcancel := context.WithTimeout(ctx, 15*time.Second)
	defer tcancel()
	if err := g.thaw(tctx); err != nil {
		return abort(fmt.Errorf("thaw its volume after resuming it: %w", err))
	}
	if g.rec.MemoryLimit > 0 {
		// Raised for the restore (prepareJail); the page cache it charged
		// is reclaimed as the limit comes down.
		_ = v.cgroups.SetMemory(spec.AppID, jail.Limits{MemoryMax: g.rec.MemoryLimit})
	}
	_ = v.Discard(ctx, spec.AppID)
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

// removeStaleSnapshots deletes half-written snapshots, and those of the
// first stamp format taken under an earlier host boot: nothing could
// restore them. A snapshot of this format outlives a reboot: its stamp
// names nothing of the boot.
func (v *VMM) removeStaleSnapshots() {
	entries, _ := os.ReadDir(v.cfg.SnapshotDir)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(v.cfg.SnapshotDir, e.Name())
		if s, err := readStamp(dir); err != nil || (s.Format < stampFormat && s.BootID != v.bootID) {
			_ = os.RemoveAll(dir)
		}
	}
}
