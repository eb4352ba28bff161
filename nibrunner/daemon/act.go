package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/slot"
)

// act carries out a plan: take-downs and sleeps go to the apps' workers at
// once, and a deployment the planner gave up on is recorded out of
// restarts (its guest, if up, taken down); then the pass hands the volume
// work to the volumes' workers (waiting for it at most
// Config.VolumeSettle, volwork.go), gives every app about to start a slot and
// the network its rules, admits starts into memory and hands them to the
// workers; then checkpoints and exports. It does not wait for the app
// workers: each commits its result and asks for a pass.
//
// The plan is of the apps as they were at commit plannedAt. An app whose
// worker is busy, or committed since (a wake a request asked while this
// pass made a volume), is left alone, at both points where act hands out
// work: the plan no longer says what it needs, and its commit asked for
// the pass that will. Likewise the volumes are as listed after commit
// listed, and a volume whose worker committed since is left to the next
// pass (volumes.apply).
func (d *Daemon) act(ctx context.Context, now time.Time, doc *desired.HostDesiredState, acts plan.Actions, listed, plannedAt uint64) {
	var ups, sleeps []plan.InstanceAction
	d.mu.Lock()
	for _, x := range acts.Instances {
		a := d.apps[x.AppID]
		if a != nil && a.stale(plannedAt) {
			continue // its worker is at it, or was; the next pass plans again
		}
		switch x.Kind {
		case plan.Stop, plan.Forget:
			d.dispatch(x, nil, 0)
		case plan.GiveUp:
			if a == nil {
				continue
			}
			a.gaveUp()
			if a.up() {
				d.dispatch(plan.InstanceAction{Kind: plan.Stop, AppID: x.AppID}, nil, 0)
			}
		case plan.Sleep:
			sleeps = append(sleeps, x)
		case plan.Start, plan.Restart, plan.Wake, plan.Replace, plan.Recover:
			ups = append(ups, x)
		case plan.NoAction:
			// The planner lists no such action.
		}
	}
	idle := make(map[string]time.Time, len(sleeps))
	for _, x := range sleeps {
		idle[x.AppID] = d.lastActive(x.AppID)
	}
	for _, x := range plan.SleepOrder(sleeps, idle) {
		d.dispatch(x, nil, 0)
	}
	d.mu.Unlock()

	d.vols.apply(ctx, now, doc, acts.Volumes, listed)
	// Every app about to start holds its slot, and the network has its
	// tap and rules, before the first guest boots.
	if len(ups) > 0 {
		d.ensureSlots(ctx, ups)
		d.routeAndNetwork(ctx)
	}
	d.mu.Lock()
	if d.doc == doc {
		given, held := d.memoryInUse()
		for _, x := range ups {
			if a := d.apps[x.AppID]; a != nil && a.stale(plannedAt) {
				continue // its worker acted while this pass made volumes and the network
			}
			if in := d.instance(x.AppID); in != nil {
				if need, ok := d.admit(x, in, given, held); ok {
					given, held = given+need, held+need
					d.dispatch(x, in, need)
				}
			}
		}
	} // else a new document arrived: the next pass plans for it
	d.mu.Unlock()

	d.apply(acts)
}

// ensureSlots gives every app in ups that has none a slot, persisting them
// before anything relies on them; a note says why when none is left.
func (d *Daemon) ensureSlots(ctx context.Context, ups []plan.InstanceAction) {
	d.mu.Lock()
	var need []string
	for _, x := range ups {
		if a := d.apps[x.AppID]; a == nil || !a.hasSlot {
			need = append(need, x.AppID)
		}
	}
	added, full := slot.Assign(d.slots(), need, d.cfg.MaxApps)
	for _, app := range full {
		d.note(app, explain.SlotsFull(d.cfg.MaxApps))
	}
	d.mu.Unlock()
	if len(added) == 0 {
		return
	}
	err := d.db.PutSlots(ctx, added)
	d.mu.Lock()
	defer d.mu.Unlock()
	for app, n := range added {
		if err != nil {
			d.note(app, explain.SlotUnrecorded(err))
			continue
		}
		a := d.appOf(app)
		a.slot, a.hasSlot = n, true
	}
}

// admit feeds the start gate (plan.Admit) what the host knows of app's
// start now: the network rules, its volume, the memory given to guests
// and what they hold, the guests that could sleep to make room, its slot.
// A start the gate holds back is noted for the report and waits for a
// later pass; the guests the gate names go to sleep now. It returns the
// memory the guest will be given. Called with mu held.
func (d *Daemon) admit(x plan.InstanceAction, in *desired.DesiredInstance, given, held uint64) (uint64, bool) {
	dep := string(in.DeploymentId)
	a := d.appOf(x.AppID)
	if a.rec == nil || a.rec.DeploymentID != dep {
		// A new app, or a new deployment: a fresh record and budget.
		a.rec = &record{AppID: a.id, DeploymentID: dep, Budget: backoff.Budget{DeploymentID: dep}}
	}
	a.rec.VolumeID = string(in.VolumeId)
	volReady, volWhy := d.vols.ready(string(in.VolumeId), d.now())
	freeingGiven, freeingHeld := d.freeing()
	adm := plan.Admit(in, plan.StartFacts{
		NetworkReady: d.netReady, NetworkErr: d.netErr,
		VolumeReady: volReady, VolumeErr: volWhy,
		InUseMiB: given, HeldMiB: held, CapacityMiB: d.cfg.CapacityMiB,
		Overcommit: d.cfg.MemoryOvercommit, Sleepers: d.sleepers(x.AppID),
		FreeingGivenMiB: freeingGiven, FreeingHeldMiB: freeingHeld,
		HasSlot: a.hasSlot, NoSlot: a.note,
	})
	if adm.Why != "" {
		a.note = adm.Why
		for _, id := range adm.Sleep {
			d.cfg.Logf("nibrunnerd: %s goes to sleep to make room in memory for %s", id, x.AppID)
			d.dispatch(plan.InstanceAction{Kind: plan.Sleep, AppID: id}, nil, 0)
		}
		return 0, false
	}
	return adm.NeedMiB, true
}

// dispatch hands x to app's worker. Called with mu held; in is the
// instance for actions that start a guest, need the memory it holds.
func (d *Daemon) dispatch(x plan.InstanceAction, in *desired.DesiredInstance, need uint64) {
	a := d.appOf(x.AppID)
	a.busy, a.reservedMiB = true, need
	switch x.Kind {
	case plan.Start, plan.Wake:
	case plan.Sleep, plan.Stop, plan.Forget:
		a.goingDown = a.up()
		d.stopProber(a)
	case plan.Replace, plan.Recover, plan.Restart, plan.GiveUp, plan.NoAction:
		// The guest goes down (or to sleep): its health no longer counts.
		d.stopProber(a)
	}
	if x.Kind == plan.Restart && a.rec != nil {
		d.cfg.Logf("nibrunnerd: restart %s (restart %d of its budget): %s", x.AppID, x.Restart.N, a.rec.FailReason)
	}
	urgent := a.wantAwake
	n := a.slot
	a.signal()
	if _, ok := d.workers.Go(func(ctx context.Context) { d.work(ctx, x, in, n, urgent) }); !ok {
		// The daemon closes: the next one's first pass plans it again.
		a.busy, a.reservedMiB, a.goingDown = false, 0, false
	}
}

// work is one action on one app's worker. It holds no daemon-wide lock
// while it calls the VMM or fetches layers; what happened is committed
// under the lock at the end (commit).
func (d *Daemon) work(ctx context.Context, x plan.InstanceAction, in *desired.DesiredInstance, n int, urgent bool) {
	id := x.AppID
	switch x.Kind {
	case plan.Stop:
		err := d.takeDown(ctx, id, true)
		d.commit(id, func(a *app) {
			a.tookDown(err)
			if err == nil && a.rec != nil {
				// Stopped, it has no failure left to restart: started
				// again, it boots at once.
				a.rec.Sleeping, a.rec.FailedAt = false, time.Time{}
			}
		})
	case plan.Forget:
		err := d.takeDown(ctx, id, true)
		if err == nil {
			// The record goes with the next persist.
			err = d.db.ReleaseSlot(ctx, id)
		}
		d.commit(id, func(a *app) {
			if err != nil {
				d.cfg.Logf("nibrunnerd: forget %s: %v", id, err)
				a.tookDown(err)
				return
			}
			delete(d.apps, id)
			d.forgotten = append(d.forgotten, id)
		})
	case plan.Sleep:
		err := d.sleepGuest(ctx, id)
		d.commit(id, func(a *app) { a.slept(err, d.now()) })
	case plan.Replace, plan.Recover, plan.Restart:
		// Each boots cold, so any snapshot goes: a replacement's or a
		// recovery's is of the old guest, and one a restart finds (a wake
		// that failed, whose drop failed too) would otherwise be restored
		// later over a volume that has moved on.
		err := d.takeDown(ctx, id, true)
		if err != nil {
			d.commit(id, func(a *app) { a.tookDown(err) })
			return
		}
		d.update(id, func(a *app) {
			a.tookDown(nil)
			if a.rec != nil {
				a.rec.Sleeping = false
			}
		})
		d.bringUp(ctx, x, in, n, urgent)
	case plan.Start, plan.Wake:
		d.bringUp(ctx, x, in, n, urgent)
	case plan.GiveUp, plan.NoAction:
		// Never handed to a worker (act records a give-up itself): the
		// worker only gives the app back.
		d.commit(id, func(*app) {})
	}
}

// update changes app's state under the lock and publishes it, its worker
// still busy.
func (d *Daemon) update(app string, fn func(*app)) { d.change(app, fn, false) }

// commit records what app's worker did, frees the worker, publishes the
// routes and asks for a pass, which persists and reports it.
func (d *Daemon) commit(app string, fn func(*app)) { d.change(app, fn, true) }

func (d *Daemon) change(app string, fn func(*app), done bool) {
	d.mu.Lock()
	if a := d.apps[app]; a != nil {
		fn(a)
		if done {
			a.busy, a.reservedMiB, a.goingDown = false, 0, false
		}
		a.changedAt = d.seq.next()
		a.signal()
	}
	d.publishLocked()
	d.mu.Unlock()
	d.routes.changed()
	if done {
		d.Kick()
	}
}

// takeDownForGrow takes down the guests the grow rule says (plan.GrowTakesDown):
// growing is offline, and the next plan starts them again on the bigger
// volume.
func (d *Daemon) takeDownForGrow(ctx context.Context, id string) {
	d.mu.Lock()
	facts := make(map[string]plan.Instance, len(d.apps))
	for name, a := range d.apps {
		if a.rec != nil {
			facts[name] = d.facts(a)
		}
	}
	on := plan.GrowTakesDown(id, facts)
	for _, name := range on {
		x := d.apps[name]
		x.busy = true
		d.stopProber(x)
		x.signal()
	}
	d.mu.Unlock()
	for _, name := range on {
		err := d.takeDown(ctx, name, false)
		d.commit(name, func(x *app) { x.tookDown(err) })
	}
}

// takeDown stops app's guest (and, when discard, drops its snapshot),
// taking a turn at the VM gate.
func (d *Daemon) takeDown(ctx context.Context, app string, discard bool) error {
	if err := d.vmGate.acquire(ctx, false); err != nil {
		return err
	}
	defer d.vmGate.release()
	cctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	if err := d.deps.VMM.Stop(cctx, app); err != nil {
		d.cfg.Logf("nibrunnerd: stop %s: %v", app, err)
		return err
	}
	if discard {
		if err := d.deps.VMM.Discard(cctx, app); err != nil {
			d.cfg.Logf("nibrunnerd: discard the snapshot of %s: %v", app, err)
		}
	}
	return nil
}

// tookDown records a take-down's outcome.
func (a *app) tookDown(err error) {
	if err != nil {
		if a.rec != nil {
			a.rec.Message = explain.StopFailed(err)
		}
		return
	}
	a.hasVM = false
	if a.rec != nil {
		a.rec.Message = ""
	}
}

// sleepGuest snapshots app's guest, taking a turn at the VM gate.
func (d *Daemon) sleepGuest(ctx context.Context, app string) error {
	if err := d.vmGate.acquire(ctx, false); err != nil {
		return err
	}
	defer d.vmGate.release()
	cctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	return d.deps.VMM.Sleep(cctx, app)
}

// slept records a sleep's outcome. A failed sleep leaves the guest up; the
// planner tries again after plan.SleepBackoff.
func (a *app) slept(err error, now time.Time) {
	a.wantAsleep = false
	if err != nil {
		a.failedSleeps++
		a.sleepFailedAt = now
		if a.rec != nil {
			a.rec.Message = explain.SleepFailed(a.failedSleeps, err)
		}
		return
	}
	a.failedSleeps, a.sleepFailedAt = 0, time.Time{}
	a.hasVM = false
	if a.rec != nil {
		a.rec.Sleeping, a.rec.Message = true, ""
	}
}

// gaveUp records that the deployment a's guest runs has spent its restart
// budget: the planner restarts it no more until a new deployment.
func (a *app) gaveUp() {
	if a.rec != nil {
		a.rec.Budget = a.rec.Budget.ForDeployment(a.rec.DeploymentID).Exhaust()
	}
}
