package daemon

import (
	"context"
	"fmt"

	"alpnib.dev/nibrunner/backoff"
)

// An on-request app asleep here travels with a checkpoint of its volume:
// its memory snapshot goes up beside the checkpoint (Travel.Send), and a
// host that restores a volume from that checkpoint fetches the snapshot
// with it (Travel.Fetch), so the app arrives asleep and its first start
// there is a wake (docs/fleet.md, "Waking an app on another host").

// savedSnapshot is when app's snapshot was saved, read before a copy of
// its volume: 0 unless the host has a Travel and app is asleep.
func (d *Daemon) savedSnapshot(app string) int64 {
	if d.deps.Travel == nil {
		return 0
	}
	d.mu.Lock()
	asleep := d.apps.asleep(app)
	d.mu.Unlock()
	if !asleep {
		return 0
	}
	return d.deps.Travel.SavedAt(app)
}

// asleep: app has no guest and a snapshot waits for it (mu held).
func (ps *apps) asleep(app string) bool {
	a := ps.byID[app]
	return a != nil && a.rec != nil && a.rec.Sleeping && !a.hasVM
}

// sendSnapshot puts app's snapshot, saved at saved (savedSnapshot, read
// before the volume was copied), beside checkpoint id's object at key. A
// checkpoint of a volume whose app is not asleep (saved 0) gets none, and
// whatever an earlier checkpoint of that id left beside it goes: a
// snapshot is right only with the volume its sleep froze.
func (d *Daemon) sendSnapshot(ctx context.Context, id, app string, saved int64, key string) error {
	t := d.deps.Travel
	if t == nil {
		return nil
	}
	if saved == 0 {
		return t.Forget(ctx, key)
	}
	n, err := t.Send(ctx, app, saved, key)
	if err != nil {
		// The job is tried again: a new copy of the volume, and the
		// snapshot that fits it, or none if the app woke.
		return fmt.Errorf("checkpoint %s: send the memory snapshot of %s beside it: %w", id, app, err)
	}
	if n > 0 {
		d.cfg.Logf("nibrunnerd: checkpoint %s carries the memory snapshot of %s, asleep (%d bytes sent)", id, app, n)
	}
	return nil
}

// forgetSnapshot deletes the snapshot beside checkpoint id, before the
// checkpoint itself goes.
func (d *Daemon) forgetSnapshot(ctx context.Context, id string) error {
	t := d.deps.Travel
	if t == nil {
		return nil
	}
	list, err := d.deps.Checkpoints.List(ctx)
	if err != nil {
		return fmt.Errorf("delete checkpoint %s: %w", id, err)
	}
	if info, ok := list[id]; ok && info.Key != "" {
		return t.Forget(ctx, info.Key)
	}
	return nil
}

// restoredFromCheckpoint is told by the volumes' worker that volume vol
// of app was just made from the checkpoint at objectKey, before the
// volume counts as made: the snapshot beside it, if any, becomes app's,
// and app is recorded asleep in the snapshot's deployment, so the planner
// wakes it (on a request, or at once when it is asked running) rather than
// booting it. A snapshot this host could not restore is logged, and the
// app boots cold.
func (d *Daemon) restoredFromCheckpoint(ctx context.Context, app, vol, objectKey string) {
	d.apps.arrive(ctx, app, vol, objectKey)
}

// arrive is restoredFromCheckpoint, on the app component (mu not held).
func (ps *apps) arrive(ctx context.Context, app, vol, objectKey string) {
	t := ps.deps.Travel
	if t == nil || app == "" {
		return
	}
	ps.mu.Lock()
	a := ps.byID[app]
	hasGuest := a != nil && (a.hasVM || a.busy)
	ps.mu.Unlock()
	if hasGuest {
		ps.cfg.Logf("nibrunnerd: volume %s was restored from %s while %s has a guest: its memory snapshot is not fetched", vol, objectKey, app)
		return
	}
	dep, n, err := t.Fetch(ctx, app, objectKey)
	if err != nil {
		ps.cfg.Logf("nibrunnerd: %s boots cold on its volume restored from %s: %v", app, objectKey, err)
		return
	}
	if dep == "" {
		return
	}
	ps.mu.Lock()
	a = ps.appOf(app)
	if a.hasVM || a.busy {
		ps.mu.Unlock()
		ps.cfg.Logf("nibrunnerd: %s was started while its memory snapshot was fetched: it boots cold", app)
		return
	}
	a.rec = &record{AppID: app, DeploymentID: dep, VolumeID: vol, Booted: true, Sleeping: true,
		Budget: backoff.Budget{DeploymentID: dep}}
	a.failure, a.failureDep = "", ""
	a.changedAt = ps.seq.next()
	a.signal()
	ps.mu.Unlock()
	ps.cfg.Logf("nibrunnerd: %s arrived asleep: its memory snapshot of deployment %s (%d bytes) came beside checkpoint %s, and its next start wakes it", app, dep, n, objectKey)
}
