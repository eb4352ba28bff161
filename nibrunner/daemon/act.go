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
	d.mu.Lock()
	ups := d.apps.handOut(acts.Instances, plannedAt)
	d.mu.Unlock()

	d.vols.apply(ctx, now, doc, acts.Volumes, listed)
	// Every app about to start holds its slot, and the network has its
	// tap and rules, before the first guest boots.
	if len(ups) > 0 {
		d.apps.ensureSlots(ctx, ups)
		d.routeAndNetwork(ctx)
	}
	d.mu.Lock()
	if d.acc.doc == doc {
		d.apps.startAll(ups, plannedAt)
	} // else a new document arrived: the next pass plans for it
	d.mu.Unlock()

	d.apply(acts)
}

// ensureSlots gives every app in ups that has none a slot, persisting them
// before anything relies on them; a note says why when none is left.
func (ps *apps) ensureSlots(ctx context.Context, ups []plan.InstanceAction) {
	ps.mu.Lock()
	var need []string
	for _, x := range ups {
		if a := ps.byID[x.AppID]; a == nil || !a.hasSlot {
			need = append(need, x.AppID)
		}
	}
	added, full := slot.Assign(ps.slots(), need, ps.cfg.MaxApps)
	for _, app := range full {
		ps.note(app, explain.SlotsFull(ps.cfg.MaxApps))
	}
	ps.mu.Unlock()
	if len(added) == 0 {
		return
	}
	err := ps.db.PutSlots(ctx, added)
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for app, n := range added {
		if err != nil {
			ps.note(app, explain.SlotUnrecorded(err))
			continue
		}
		a := ps.appOf(app)
		a.slot, a.hasSlot = n, true
	}
}

// admit feeds the start gate (plan.Admit) what the host knows of app's
// start now: the network rules, its volume, the memory given to guests
// and what they hold, the guests that could sleep to make room, its slot.
// A start the gate holds back is noted for the report and waits for a
// later pass; the guests the gate names go to sleep now. It returns the
// memory the guest will be given. Called with mu held.
func (ps *apps) admit(x plan.InstanceAction, in *desired.DesiredInstance, given, held uint64) (uint64, bool) {
	dep := string(in.DeploymentId)
	a := ps.appOf(x.AppID)
	if a.rec == nil || a.rec.DeploymentID != dep {
		// A new app, or a new deployment: a fresh record and budget.
		a.rec = &record{AppID: a.id, DeploymentID: dep, Budget: backoff.Budget{DeploymentID: dep}}
	}
	a.rec.VolumeID = string(in.VolumeId)
	volReady, volWhy := ps.host.volumeReady(string(in.VolumeId), ps.now())
	freeingGiven, freeingHeld := ps.freeing()
	netReady, netErr := ps.host.network()
	adm := plan.Admit(in, plan.StartFacts{
		NetworkReady: netReady, NetworkErr: netErr,
		VolumeReady: volReady, VolumeErr: volWhy,
		InUseMiB: given, HeldMiB: held, CapacityMiB: ps.cfg.CapacityMiB,
		Overcommit: ps.cfg.MemoryOvercommit, Sleepers: ps.sleepers(x.AppID),
		FreeingGivenMiB: freeingGiven, FreeingHeldMiB: freeingHeld,
		HasSlot: a.hasSlot, NoSlot: a.note,
	})
	if !adm.Admitted() {
		a.note = explain.Admission(adm)
		for _, id := range adm.Sleep {
			ps.cfg.Logf("nibrunnerd: %s goes to sleep to make room in memory for %s", id, x.AppID)
			ps.dispatch(plan.InstanceAction{Kind: plan.Sleep, AppID: id}, nil, 0)
		}
		return 0, false
	}
	return adm.NeedMiB, true
}

// dispatch hands x to app's worker. Called with mu held; in is the
// instance for actions that start a guest, need the memory it holds.
func (ps *apps) dispatch(x plan.InstanceAction, in *desired.DesiredInstance, need uint64) {
	a := ps.appOf(x.AppID)
	a.busy, a.reservedMiB = true, need
	switch x.Kind {
	case plan.Start, plan.Wake:
	case plan.Sleep, plan.Stop, plan.Forget:
		a.goingDown = a.up()
		ps.stopProber(a)
	case plan.Replace, plan.Recover, plan.Restart, plan.GiveUp, plan.NoAction:
		// The guest goes down (or to sleep): its health no longer counts.
		ps.stopProber(a)
	}
	if x.Kind == plan.Restart && a.rec != nil {
		ps.cfg.Logf("nibrunnerd: restart %s (restart %d of its budget): %s", x.AppID, x.Restart.N, a.rec.FailReason)
	}
	urgent := a.wantAwake
	n := a.slot
	a.signal()
	if _, ok := ps.workers.Go(func(ctx context.Context) { ps.work(ctx, x, in, n, urgent) }); !ok {
		// The daemon closes: the next one's first pass plans it again.
		a.busy, a.reservedMiB, a.goingDown = false, 0, false
	}
}

// work is one action on one app's worker. It holds no daemon-wide lock
// while it calls the VMM or fetches layers; what happened is committed
// under the lock at the end (commit).
func (ps *apps) work(ctx context.Context, x plan.InstanceAction, in *desired.DesiredInstance, n int, urgent bool) {
	id := x.AppID
	switch x.Kind {
	case plan.Stop:
		err := ps.takeDown(ctx, id, true)
		ps.commit(id, func(a *app) {
			a.tookDown(err)
			if err == nil && a.rec != nil {
				// Stopped, it has no failure left to restart: started
				// again, it boots at once.
				a.rec.Sleeping, a.rec.FailedAt = false, time.Time{}
			}
		})
	case plan.Forget:
		err := ps.takeDown(ctx, id, true)
		if err == nil {
			// The record goes with the next persist.
			err = ps.db.ReleaseSlot(ctx, id)
		}
		ps.commit(id, func(a *app) {
			if err != nil {
				ps.cfg.Logf("nibrunnerd: forget %s: %v", id, err)
				a.tookDown(err)
				return
			}
			delete(ps.byID, id)
			ps.forgotten = append(ps.forgotten, id)
		})
	case plan.Sleep:
		err := ps.sleepGuest(ctx, id)
		ps.commit(id, func(a *app) { a.slept(err, ps.now()) })
	case plan.Replace, plan.Recover, plan.Restart:
		// Each boots cold, so any snapshot goes: a replacement's or a
		// recovery's is of the old guest, and one a restart finds (a wake
		// that failed, whose drop failed too) would otherwise be restored
		// later over a volume that has moved on.
		err := ps.takeDown(ctx, id, true)
		if err != nil {
			ps.commit(id, func(a *app) { a.tookDown(err) })
			return
		}
		ps.update(id, func(a *app) {
			a.tookDown(nil)
			if a.rec != nil {
				a.rec.Sleeping = false
			}
		})
		ps.bringUp(ctx, x, in, n, urgent)
	case plan.Start, plan.Wake:
		ps.bringUp(ctx, x, in, n, urgent)
	case plan.GiveUp, plan.NoAction:
		// Never handed to a worker (act records a give-up itself): the
		// worker only gives the app back.
		ps.commit(id, func(*app) {})
	}
}

// update changes app's state under the lock and publishes it, its worker
// still busy.
func (ps *apps) update(app string, fn func(*app)) { ps.change(app, fn, false) }

// commit records what app's worker did, frees the worker, publishes the
// routes and asks for a pass, which persists and reports it.
func (ps *apps) commit(app string, fn func(*app)) { ps.change(app, fn, true) }

func (ps *apps) change(app string, fn func(*app), done bool) {
	ps.mu.Lock()
	if a := ps.byID[app]; a != nil {
		fn(a)
		if done {
			a.busy, a.reservedMiB, a.goingDown = false, 0, false
		}
		a.changedAt = ps.seq.next()
		a.signal()
	}
	ps.host.publishLocked()
	ps.mu.Unlock()
	ps.host.routesChanged()
	if done {
		ps.host.Kick()
	}
}

// takeDownForGrow takes down the guests the grow rule says (plan.GrowTakesDown):
// growing is offline, and the next plan starts them again on the bigger
// volume.
func (ps *apps) takeDownForGrow(ctx context.Context, id string) {
	ps.mu.Lock()
	facts := make(map[string]plan.Instance, len(ps.byID))
	for name, a := range ps.byID {
		if a.rec != nil {
			facts[name] = ps.facts(a)
		}
	}
	on := plan.GrowTakesDown(id, facts)
	for _, name := range on {
		x := ps.byID[name]
		x.busy = true
		ps.stopProber(x)
		x.signal()
	}
	ps.mu.Unlock()
	for _, name := range on {
		err := ps.takeDown(ctx, name, false)
		ps.commit(name, func(x *app) { x.tookDown(err) })
	}
}

// takeDown stops app's guest (and, when discard, drops its snapshot),
// taking a turn at the VM gate.
func (ps *apps) takeDown(ctx context.Context, app string, discard bool) error {
	if err := ps.gate.acquire(ctx, false); err != nil {
		return err
	}
	defer ps.gate.release()
	cctx, cancel := context.WithTimeout(ctx, ps.cfg.OpTimeout)
	defer cancel()
	if err := ps.deps.VMM.Stop(cctx, app); err != nil {
		ps.cfg.Logf("nibrunnerd: stop %s: %v", app, err)
		return err
	}
	if discard {
		if err := ps.deps.VMM.Discard(cctx, app); err != nil {
			ps.cfg.Logf("nibrunnerd: discard the snapshot of %s: %v", app, err)
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
func (ps *apps) sleepGuest(ctx context.Context, app string) error {
	if err := ps.gate.acquire(ctx, false); err != nil {
		return err
	}
	defer ps.gate.release()
	cctx, cancel := context.WithTimeout(ctx, ps.cfg.OpTimeout)
	defer cancel()
	return ps.deps.VMM.Sleep(cctx, app)
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
