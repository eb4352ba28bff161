package daemon

import (
	"context"
	"strings"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/jobs"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/vmm"
)

// Checkpoints and exports are long (a freeze, a copy, an upload), so a
// pass never runs them: it hands each one to the job runner (nibrunner/jobs)
// and reads how the job is doing when it reports. A job runs outside the
// daemon's lock, a bounded number at a time, is retried with backoff when it
// fails, and kicks a pass when it ends so the report shows its result.

// apply hands the plan's checkpoints and exports to the job runner
// (background.go), once the instance actions are under way.
func (d *Daemon) apply(acts plan.Actions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.background(acts)
}

// Job ids: one per checkpoint or export and what is done to it.
func cpCreateJob(id string) string  { return "checkpoint/" + id }
func cpDeleteJob(id string) string  { return "checkpoint-delete/" + id }
func expWriteJob(id string) string  { return "export/" + id }
func expForgetJob(id string) string { return "export-forget/" + id }

// background submits the plan's checkpoints and exports. Asking for a job
// that is already queued, running or waiting for its retry does nothing; a
// job that ended ready before this pass observed is asked for again only if
// its effect is still not observed (someone removed it since).
func (d *Daemon) background(acts plan.Actions) {
	for _, c := range acts.Checkpoints {
		id, vol := c.CheckpointID, c.VolumeID
		if c.Create {
			d.jobs.Forget(cpDeleteJob(id))
			app := d.vols.appOf(vol)
			d.submit(cpCreateJob(id), func(ctx context.Context) error {
				if err := d.vols.atRestForCopy(vol); err != nil {
					return err
				}
				// Read before the copy: the snapshot that fits it (travel.go).
				saved := d.savedSnapshot(app)
				info, err := d.deps.Checkpoints.Create(ctx, id, d.volumeToRead(ctx, vol, app))
				if err != nil {
					return err
				}
				return d.sendSnapshot(ctx, id, app, saved, info.Key)
			})
		} else {
			d.jobs.Forget(cpCreateJob(id))
			d.submit(cpDeleteJob(id), func(ctx context.Context) error {
				if err := d.forgetSnapshot(ctx, id); err != nil {
					return err
				}
				return d.deps.Checkpoints.Delete(ctx, id)
			})
		}
	}
	// An export dropped from the document or asked absent while it is
	// written is cancelled: exports are authoritative.
	var writing []string
	for _, job := range d.jobs.IDs() {
		if id, ok := strings.CutPrefix(job, "export/"); ok {
			writing = append(writing, id)
		}
	}
	for _, id := range plan.ExportsToCancel(d.acc.doc, writing) {
		d.jobs.Forget(expWriteJob(id))
	}
	for _, a := range acts.Exports {
		id := a.ExportID
		if !a.Write {
			d.jobs.Forget(expWriteJob(id))
			d.submit(expForgetJob(id), func(ctx context.Context) error { return d.deps.Exports.Forget(ctx, id) })
			continue
		}
		for _, e := range d.acc.doc.Exports {
			if string(e.ExportId) == id {
				d.jobs.Forget(expForgetJob(id))
				app := d.vols.appOf(string(e.VolumeId))
				d.submit(expWriteJob(id), func(ctx context.Context) error {
					if err := d.vols.atRestForCopy(string(e.VolumeId)); err != nil {
						return err
					}
					_, err := d.deps.Exports.Write(ctx, e, d.volumeToRead(ctx, string(e.VolumeId), app))
					return err
				})
			}
		}
	}
}

// submit starts job id unless it is known; a ready job that ended before
// this pass listed what exists is started again (its effect is gone).
func (d *Daemon) submit(id string, fn jobs.Func) {
	if st, ok := d.jobs.Status(id); ok && st.State == jobs.Ready && st.EndedAt.Before(d.loop.listedAt) {
		d.jobs.Forget(id)
	}
	if _, err := d.jobs.Submit(id, fn); err != nil {
		d.cfg.Logf("nibrunnerd: %s: %v", id, err)
	}
}

// volumeToRead names volume id's file and, when the guest of app (the one
// that mounts it) is running now and the VMM can freeze it, that guest's
// freezer; otherwise a check that the guest did not start during the copy.
// It runs in the job, just before the copy, so it sees the guest as it is
// then, not as the pass that asked for the job saw it.
func (d *Daemon) volumeToRead(ctx context.Context, id, app string) checkpoint.Volume {
	v := checkpoint.Volume{ID: id, Path: d.deps.Volumes.Path(id)}
	if app == "" {
		return v
	}
	running := func(ctx context.Context) (bool, error) {
		list, err := d.deps.VMM.List(ctx)
		if err != nil {
			return false, err
		}
		for _, st := range list {
			if st.AppID == app && st.State == vmm.Running {
				return true, nil
			}
		}
		return false, nil
	}
	up, err := running(ctx)
	f, can := vmm.As[vmm.Freezer](d.deps.VMM)
	switch {
	case (up || err != nil) && can:
		// Unknown is treated as running: a freeze of a guest that is not
		// there fails the job, which is retried, rather than copying a
		// volume that may be in use.
		v.Freezer = guestFreezer{vmm: f, app: app}
	case up:
		v.AtRest = func(context.Context) error {
			return explain.CopyCannotFreeze(app)
		}
	default:
		v.AtRest = func(ctx context.Context) error {
			up, err := running(ctx)
			switch {
			case err != nil:
				return explain.CopyUnsure(app, err)
			case up:
				return explain.CopyTorn(app)
			}
			return nil
		}
	}
	return v
}

// guestFreezer binds a VMM's freezer to one app.
type guestFreezer struct {
	vmm vmm.Freezer
	app string
}

func (g guestFreezer) Freeze(ctx context.Context) error { return g.vmm.FreezeVolume(ctx, g.app) }
func (g guestFreezer) Thaw(ctx context.Context) error   { return g.vmm.ThawVolume(ctx, g.app) }

// scheduleHost is the host as scheduled checkpoints read it
// (schedule.Host): the volumes listed, each read as a checkpoint job
// reads it.
type scheduleHost struct{ d *Daemon }

func (h scheduleHost) Volumes(ctx context.Context) ([]string, error) {
	d := h.d
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.vols.listedIDs(), nil
}

func (h scheduleHost) VolumeToCopy(ctx context.Context, id string) (checkpoint.Volume, error) {
	d := h.d
	if err := d.vols.atRestForCopy(id); err != nil {
		return checkpoint.Volume{}, err
	}
	d.mu.Lock()
	app := d.vols.appOf(id)
	d.mu.Unlock()
	return d.volumeToRead(ctx, id, app), nil
}
