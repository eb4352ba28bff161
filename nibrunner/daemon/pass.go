package daemon

import (
	"context"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/vmm"
)

// loopState is how the passes go: how many began and ended, the commits'
// sequence, and when the plan waits for a backoff. Every field is guarded
// by Daemon.mu, except listedAt, which only the pass reads and writes
// (Daemon.passMu).
type loopState struct {
	// seq numbers the workers' commits (app.changedAt, vol.changedAt);
	// the components hold it too.
	seq commits
	// begun counts the passes begun, done is the last one that ended
	// having planned; passed is closed, and replaced, when a pass ends.
	begun, done uint64
	passed      chan struct{}
	// retryAt is when the last plan's first backoff ends (a restart or a
	// failed sleep's retry comes due): Run plans again then.
	retryAt time.Time
	// lastPass is when the last pass observed (the meters count from it).
	lastPass time.Time
	// listedAt is when the last pass listed the checkpoints and exports
	// that exist (passMu).
	listedAt time.Time
}

// opTimeout bounds one adapter call, so one stuck guest cannot hold up the
// host.
const opTimeout = 60 * time.Second

// Pass runs one observe → plan → act → persist → report cycle. It does not
// wait for the actions it hands to the apps' workers: each commits on its
// own and asks for another pass, which reports it.
func (d *Daemon) Pass(ctx context.Context) error {
	d.passMu.Lock()
	defer d.passMu.Unlock()
	began := d.now()
	d.mu.Lock()
	seen := d.loop.seq.last()
	d.loop.begun++
	n, planned := d.loop.begun, false
	defer func() { d.passEnded(n, planned) }()
	d.mu.Unlock()
	d.recordAgain(ctx)

	// Observe, holding no lock.
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
	d.loop.listedAt = d.now()
	free := d.vols.freeDisk(ctx)
	cps, err := d.deps.Checkpoints.List(ctx)
	if err != nil {
		return fmt.Errorf("list checkpoints: %w", err)
	}
	exps, err := d.deps.Exports.List(ctx)
	if err != nil {
		return fmt.Errorf("list exports: %w", err)
	}

	// Decide, under the lock: nothing here does I/O.
	d.mu.Lock()
	now := d.now()
	d.apps.clearNotes()
	d.vols.setListing(vols, seen)
	d.vols.diskFree = free
	d.apps.observeGuests(now, vms, seen)
	d.noteLayers(now)
	doc := d.acc.doc
	d.vols.giveUpUnasked(doc)
	var acts plan.Actions
	if doc != nil {
		// With no accepted document the host changes nothing: an empty
		// instance list would forget every app.
		acts = plan.Plan(doc, d.observed(now, "", cps, exps))
	}
	d.loop.retryAt = acts.RetryAt
	planned = true
	// What the plan read of each app is as of this commit: act leaves an
	// app alone whose worker committed since.
	plannedAt := d.loop.seq.last()
	d.mu.Unlock()

	// Act.
	if doc != nil {
		d.act(ctx, now, doc, acts, seen, plannedAt)
		if len(acts.Volumes) > 0 {
			// Report the volumes as they are now, not as apply thinks.
			d.mu.Lock()
			relisted := d.loop.seq.last()
			d.mu.Unlock()
			if vols, err = d.deps.Volumes.List(ctx); err != nil {
				return fmt.Errorf("list volumes: %w", err)
			}
			d.mu.Lock()
			d.vols.setListing(vols, relisted)
			d.mu.Unlock()
		}
	}
	d.routeAndNetwork(ctx)
	d.apps.account(ctx, now, d.loop.lastPass)
	d.vols.measureDue(ctx, now, vols)
	d.pruneLayers(now)

	// Persist, then report.
	perr := d.apps.persist(ctx, now)
	d.mu.Lock()
	statuses := d.instanceStatuses(now)
	d.apps.converged(now, statuses)
	rep := d.report(now, statuses, cps, exps)
	d.mu.Unlock()
	if err := d.writeReport(rep); err != nil {
		return err
	}
	if d.deps.Metrics != nil {
		d.deps.Metrics.Pass(d.now().Sub(began), rep)
	}
	d.mu.Lock()
	d.loop.lastPass = now
	d.mu.Unlock()
	return perr
}

// converged records in each instance's record (of its deployment) since
// when it is where the document asks it, from statuses (instanceStatuses):
// the pass commits it, the report only reads it (mu held).
func (ps *apps) converged(now time.Time, statuses map[string]plan.Status) {
	doc := ps.host.inForce()
	if doc == nil {
		return
	}
	for _, in := range doc.Instances {
		a := ps.byID[string(in.AppId)]
		if a == nil || a.rec == nil || a.rec.DeploymentID != string(in.DeploymentId) {
			continue // no record of this deployment to keep it in
		}
		a.rec.ConvergedAt = plan.ConvergedSince(in.DesiredState, statuses[a.id].State, a.rec.ConvergedAt, now)
	}
}

// passEnded records that pass n is over, however it ended, and wakes
// whoever waits for a pass. A pass that planned counts as done: each app
// keeps the note it left (what a wake that waited for the pass answers).
// One that failed before it planned (a listing failed) decided nothing and
// reset no note, so it does not count: a wake waiting for a pass waits for
// the next one rather than answer with an older pass's note.
func (d *Daemon) passEnded(n uint64, planned bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if planned {
		d.loop.done = n
		d.apps.holdNotes()
	}
	close(d.loop.passed)
	d.loop.passed = make(chan struct{})
}

// afterPass returns a channel closed when the pass running now, or else
// the next one, ends.
func (d *Daemon) afterPass() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loop.passed
}

// stale reports whether what a pass knew of a at commit seen (what it
// observed, what it planned) is out of date: its worker is busy, or
// committed since.
func (a *app) stale(seen uint64) bool { return a.busy || a.changedAt > seen }

// observeGuests brings records up to date with the guests the VMM shows:
// a guest without a record (started just before a crash, or by an older
// daemon) is adopted as it is; an exit is noted once. An app whose worker
// acted since the listing keeps what its worker committed.
func (ps *apps) observeGuests(now time.Time, vms map[string]vmm.Status, seen uint64) {
	for app, a := range ps.byID {
		if a.stale(seen) {
			continue
		}
		a.vm, a.hasVM = vms[app]
	}
	for app, st := range vms {
		a := ps.byID[app]
		if a == nil {
			a = ps.appOf(app)
			a.vm, a.hasVM = st, true
		}
		if a.stale(seen) {
			continue
		}
		rec := a.rec
		if rec == nil || rec.DeploymentID != st.DeploymentID {
			rec = &record{AppID: app, DeploymentID: st.DeploymentID, Booted: true,
				Health: health.Started(st.StartedAt), StartedAt: st.StartedAt,
				Budget: backoff.Budget{DeploymentID: st.DeploymentID, LastStart: st.StartedAt}}
			if in := ps.host.instance(app); in != nil && string(in.DeploymentId) == st.DeploymentID {
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
				ps.startProber(a, st)
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
				}
			}
		case vmm.Exited:
			ps.stopProber(a)
			if rec.FailedAt.IsZero() {
				rec.FailedAt = now
				rec.LastExitCode = st.ExitCode
				rec.FailReason = explain.ExitMessage(st.ExitCode, st.Message)
				rec.Health.State = health.Failed
			}
		}
	}
	for _, a := range ps.byID {
		if a.prober != nil && !a.stale(seen) && !a.up() {
			ps.stopProber(a)
		}
	}
}

func (d *Daemon) instance(app string) *desired.DesiredInstance {
	return d.acc.byApp[app]
}

// facts is what the daemon knows of app a, as the planner reads it (mu
// held).
func (ps *apps) facts(a *app) plan.Instance {
	o := plan.Instance{
		WantAwake: a.wantAwake, WantAsleep: a.wantAsleep,
		StartFailure: a.failure, StartFailed: a.failureDep,
		Acting: a.busy, Note: a.note,
		FailedSleeps: a.failedSleeps, SleepFailedAt: a.sleepFailedAt,
	}
	if rec := a.rec; rec != nil {
		o.DeploymentID, o.Recorded = rec.DeploymentID, rec.DeploymentID
		o.Health, o.Sleeping, o.Booted = rec.Health.State, rec.Sleeping, rec.Booted
		o.VolumeID, o.StartedAt = rec.VolumeID, rec.StartedAt
		o.Budget, o.FailedAt = rec.Budget, rec.FailedAt
		o.FailReason, o.Message = rec.FailReason, rec.Message
		if !a.hasVM && !rec.FailedAt.IsZero() && rec.DeploymentID == a.failureDep {
			// The failed start waits for its restart: the record says
			// why, and the report when it is tried again or that it is
			// out of restarts.
			o.StartFailure, o.StartFailed = "", ""
		}
	}
	if a.hasVM {
		o.DeploymentID = a.vm.DeploymentID
		if a.vm.State == vmm.Running {
			o.VM = plan.Up
		} else {
			o.VM = plan.Exited
		}
	}
	return o
}
