package daemon

import (
	"context"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/vmm"
)

// opTimeout bounds one adapter call inside a pass, so one stuck guest
// cannot hold up the host.
const opTimeout = 60 * time.Second

// Pass runs one observe → plan → apply → persist → report cycle.
func (d *Daemon) Pass(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now().UTC()
	for _, a := range d.apps {
		a.note, a.noteFails = "", false
	}

	// Observe.
	list, err := d.deps.VMM.List(ctx)
	if err != nil {
		return fmt.Errorf("list guests: %w", err)
	}
	vms := make(map[string]vmm.Status, len(list))
	for _, st := range list {
		vms[st.AppID] = st
	}
	vols, err := d.deps.Volumes.List(ctx)
	if err != nil {
		return fmt.Errorf("list volumes: %w", err)
	}
	d.listedAt = time.Now()
	cps, err := d.deps.Checkpoints.List(ctx)
	if err != nil {
		return fmt.Errorf("list checkpoints: %w", err)
	}
	exps, err := d.deps.Exports.List(ctx)
	if err != nil {
		return fmt.Errorf("list exports: %w", err)
	}
	d.observeGuests(now, vms)

	// Plan and apply. With no accepted document the host changes nothing:
	// an empty instance list would forget every app.
	if d.doc != nil {
		acts := plan.Plan(d.doc, d.observed(now, vms, vols, cps, exps))
		d.apply(ctx, now, acts, vms, vols, cps, exps)
		if len(acts.Volumes) > 0 {
			// Report the volumes as they are now, not as apply thinks.
			if vols, err = d.deps.Volumes.List(ctx); err != nil {
				return fmt.Errorf("list volumes: %w", err)
			}
		}
	}
	d.routeAndNetwork(ctx, vms)
	d.account(ctx, now, vms)
	d.measureVolumes(ctx, now, vols)

	// Persist, then report.
	perr := d.persist(ctx, now)
	rep := d.report(now, vms, vols, cps, exps)
	if err := d.writeReport(rep); err != nil {
		return err
	}
	d.lastPass = now
	return perr
}

// observeGuests brings records up to date with the guests the VMM shows:
// a guest without a record (started just before a crash, or by an older
// daemon) is adopted as it is; an exit is noted once.
func (d *Daemon) observeGuests(now time.Time, vms map[string]vmm.Status) {
	for app, st := range vms {
		a := d.appOf(app)
		rec := a.rec
		if rec == nil || rec.DeploymentID != st.DeploymentID {
			rec = &record{AppID: app, DeploymentID: st.DeploymentID, Booted: true,
				Health: health.Started(st.StartedAt), StartedAt: st.StartedAt,
				Budget: backoff.Budget{DeploymentID: st.DeploymentID, LastStart: st.StartedAt}}
			if in := d.instance(app); in != nil && string(in.DeploymentId) == st.DeploymentID {
				rec.VolumeID = string(in.VolumeId)
				rec.MemoryMiB = uint64(in.Config.Resources.MemoryMib)
			}
			if old := a.rec; old != nil && old.VolumeID != "" && rec.VolumeID == "" {
				rec.VolumeID = old.VolumeID
			}
			a.rec = rec
		}
		switch st.State {
		case vmm.Running:
			rec.Sleeping = false
			if a.prober == nil {
				d.startProber(app, rec, st)
			}
			if p := a.prober; p != nil {
				rec.Health = p.record()
				switch {
				case (rec.Health.State == health.Failed || rec.Health.State == health.Unhealthy) && rec.FailedAt.IsZero():
					rec.FailedAt = now
					rec.FailReason = p.failureMessage()
				case rec.Health.State == health.Running && !rec.FailedAt.IsZero():
					// It answered again before its restart came due.
					rec.FailedAt, rec.FailReason = time.Time{}, ""
					a.restartAt = time.Time{}
				}
			}
		case vmm.Exited:
			d.stopProber(app)
			if rec.FailedAt.IsZero() {
				rec.FailedAt = now
				rec.LastExitCode = st.ExitCode
				rec.FailReason = exitMessage(st.ExitCode)
				rec.Health.State = health.Failed
			}
		}
	}
	for app, a := range d.apps {
		if st, ok := vms[app]; a.prober != nil && (!ok || st.State != vmm.Running) {
			d.stopProber(app)
		}
	}
}

func exitMessage(code *int) string {
	if code == nil {
		return "the guest stopped on its own and its exit code is unknown"
	}
	if *code > 128 && *code < 128+65 {
		return fmt.Sprintf("the guest was ended by signal %d (exit code %d)", *code-128, *code)
	}
	return fmt.Sprintf("the app exited with code %d", *code)
}

func (d *Daemon) instance(app string) *desired.DesiredInstance {
	return d.byApp[app]
}

func (d *Daemon) observed(now time.Time, vms map[string]vmm.Status, vols map[string]VolumeInfo, cps map[string]CheckpointInfo, exps map[string]ExportInfo) plan.Observed {
	obs := plan.Observed{
		Now:         now,
		Instances:   make(map[string]plan.Instance, len(d.apps)),
		Volumes:     make(map[string]plan.Volume, len(vols)),
		Checkpoints: make(map[string]bool, len(cps)),
		Exports:     make(map[string]bool, len(exps)),
		Problems:    d.problems,
	}
	for app, a := range d.apps {
		rec := a.rec
		if rec == nil {
			continue
		}
		o := plan.Instance{
			DeploymentID: rec.DeploymentID, Health: rec.Health.State, Sleeping: rec.Sleeping,
			Booted: rec.Booted, VolumeID: rec.VolumeID, StartedAt: rec.StartedAt,
			OutOfRestarts: rec.Budget.Exhausted && rec.Budget.DeploymentID == rec.DeploymentID,
		}
		if st, ok := vms[app]; ok {
			o.DeploymentID = st.DeploymentID
			if st.State == vmm.Running {
				o.VM = plan.Up
			} else {
				o.VM = plan.Exited
			}
		}
		if d.deps.Traffic != nil {
			o.LastTrafficAt, o.Busy = d.deps.Traffic.Activity(app)
		}
		obs.Instances[app] = o
	}
	for id, v := range vols {
		obs.Volumes[id] = plan.Volume{SizeBytes: v.SizeBytes}
	}
	for id := range cps {
		obs.Checkpoints[id] = true
	}
	for id := range exps {
		obs.Exports[id] = true
	}
	return obs
}
