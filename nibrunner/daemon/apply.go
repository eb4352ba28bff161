package daemon

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/volume"
)

// apply carries out a plan: first everything that takes guests down, then
// volumes, then everything that brings guests up, then checkpoints and
// exports. An action that fails is reported and retried by a later pass.
func (d *Daemon) apply(ctx context.Context, now time.Time, acts plan.Actions, vms map[string]vmm.Status, vols map[string]VolumeInfo, cps map[string]CheckpointInfo, exps map[string]ExportInfo) {
	var ups []plan.InstanceAction
	var sleeps []string
	for _, a := range acts.Instances {
		rec := d.record(a.AppID)
		switch a.Kind {
		case plan.Stop:
			d.takeDown(ctx, a.AppID, vms, true)
			if rec != nil {
				rec.Sleeping = false
			}
		case plan.Forget:
			d.takeDown(ctx, a.AppID, vms, true)
			d.forget(ctx, a.AppID)
		case plan.Sleep:
			if r := d.appOf(a.AppID).sleepRetry; now.Before(r.next) {
				continue
			}
			sleeps = append(sleeps, a.AppID)
		case plan.Replace, plan.Recover:
			d.takeDown(ctx, a.AppID, vms, true)
			if rec != nil {
				rec.Sleeping = false
			}
			ups = append(ups, a)
		case plan.Restart:
			if d.restartDue(a.AppID, now) {
				d.takeDown(ctx, a.AppID, vms, false)
				ups = append(ups, a)
			}
		default:
			ups = append(ups, a)
		}
	}

	d.sleep(ctx, now, sleeps, vms)

	for _, v := range acts.Volumes {
		d.applyVolume(ctx, now, v, vms, vols)
	}

	// Admission counts what is up or starting now.
	var inUse uint64
	for app, st := range vms {
		if st.State == vmm.Running {
			if rec := d.record(app); rec != nil {
				inUse += rec.MemoryMiB
			}
		}
	}
	// Every app about to start holds its slot, and the network has its
	// tap and rules, before the first guest boots.
	for _, a := range ups {
		d.ensureSlot(ctx, a.AppID)
	}
	if len(ups) > 0 {
		d.routeAndNetwork(ctx, vms)
	}
	for _, a := range ups {
		in := d.instance(a.AppID)
		if in == nil {
			continue
		}
		if used, started := d.bringUp(ctx, now, a, in, vms, vols, inUse); started {
			inUse += used
		}
	}

	d.background(acts)
}

// takeDown stops app's guest (and, when discard, drops its snapshot).
func (d *Daemon) takeDown(ctx context.Context, app string, vms map[string]vmm.Status, discard bool) {
	d.stopProber(app)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := d.deps.VMM.Stop(cctx, app); err != nil {
		d.cfg.Logf("nibrunnerd: stop %s: %v", app, err)
		if rec := d.record(app); rec != nil {
			rec.Message = "could not be stopped: " + err.Error()
		}
		return
	}
	delete(vms, app)
	if rec := d.record(app); rec != nil {
		rec.Message = ""
	}
	if discard {
		if err := d.deps.VMM.Discard(cctx, app); err != nil {
			d.cfg.Logf("nibrunnerd: discard the snapshot of %s: %v", app, err)
		}
	}
}

// forget drops everything the daemon knows of app: its entry, and its
// slot and record in the database (the record goes with the next persist).
func (d *Daemon) forget(ctx context.Context, app string) {
	a := d.apps[app]
	if a == nil {
		return
	}
	if a.hasSlot {
		if err := d.db.ReleaseSlot(ctx, app); err != nil {
			// Keep the entry, and with it the slot, for the next pass.
			d.cfg.Logf("nibrunnerd: %v", err)
			a.rec, a.persisted, a.restartAt, a.sleepRetry, a.measured = nil, nil, time.Time{}, retry{}, measurement{}
			a.meters, a.metered = db.Meters{}, false
			d.forgotten = append(d.forgotten, app)
			return
		}
	}
	delete(d.apps, app)
	d.forgotten = append(d.forgotten, app)
}

// restartDue consults the restart budget of a failed app: it marks the app
// out of restarts when the budget is spent, schedules a pass for when the
// backoff ends, and says whether the restart may happen now.
func (d *Daemon) restartDue(app string, now time.Time) bool {
	a := d.apps[app]
	in := d.instance(app)
	if a == nil || a.rec == nil || in == nil {
		return false
	}
	rec := a.rec
	if rec.FailedAt.IsZero() {
		rec.FailedAt = now
	}
	rec.Budget = rec.Budget.ForDeployment(rec.DeploymentID)
	dec := policyOf(in).Next(rec.Budget, rec.FailedAt, now)
	if dec.OutOfRestarts {
		rec.Budget = rec.Budget.Exhaust()
		a.restartAt = time.Time{}
		return false
	}
	if now.Before(dec.At) {
		a.restartAt = dec.At
		return false
	}
	a.restartAt = time.Time{}
	return true
}

func policyOf(in *desired.DesiredInstance) backoff.Policy {
	p := in.Config.RestartPolicy
	return backoff.Policy{
		MaxRestarts: int(p.MaxRestarts),
		Initial:     time.Duration(p.InitialBackoffMs) * time.Millisecond,
		Max:         time.Duration(p.MaxBackoffMs) * time.Millisecond,
		Factor:      p.BackoffFactor,
		ResetAfter:  time.Duration(p.ResetAfterMs) * time.Millisecond,
	}
}

func (d *Daemon) applyVolume(ctx context.Context, now time.Time, a plan.VolumeAction, vms map[string]vmm.Status, vols map[string]VolumeInfo) {
	var dv *desired.DesiredVolume
	for i := range d.doc.Volumes {
		if string(d.doc.Volumes[i].VolumeId) == a.VolumeID {
			dv = &d.doc.Volumes[i]
		}
	}
	if dv == nil {
		return
	}
	spec := volume.Spec{VolumeID: a.VolumeID, SizeBytes: dv.SizeBytes, State: volume.Present}
	if c := dv.InitialContents; c != nil {
		spec.InitialContents = &volume.Contents{Digest: string(c.Digest), ObjectKey: string(c.ObjectKey), DestinationPath: string(c.DestinationPath)}
	}
	switch a.Kind {
	case plan.Blocked:
		d.volErr[a.VolumeID] = fmt.Sprintf("asked absent but held back: app %s still uses it; it is deleted once no instance in the document names it", a.By)
		return
	case plan.RefuseShrink:
		have := vols[a.VolumeID].SizeBytes
		d.volErr[a.VolumeID] = fmt.Sprintf("a volume only grows: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", have, dv.SizeBytes, have)
		return
	case plan.Teardown:
		spec.State = volume.Absent
	case plan.Grow:
		// Growing is offline: the guest on it goes down and the next
		// plan starts it again on the bigger volume.
		for app, x := range d.apps {
			if x.rec != nil && x.rec.VolumeID == a.VolumeID {
				if st, ok := vms[app]; ok && st.State == vmm.Running {
					d.takeDown(ctx, app, vms, false)
				}
			}
		}
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := d.deps.Volumes.Converge(cctx, spec)
	if err != nil {
		what := "could not be made"
		switch a.Kind {
		case plan.Teardown:
			what = "could not be deleted"
		case plan.Grow:
			what = fmt.Sprintf("could not be grown to %d bytes", dv.SizeBytes)
		}
		if errors.Is(err, volume.ErrShrink) {
			d.volErr[a.VolumeID] = err.Error() // says what to ask for instead
			return
		}
		d.volErr[a.VolumeID] = what + " (the next pass tries again): " + err.Error()
		return
	}
	delete(d.volErr, a.VolumeID)
	switch a.Kind {
	case plan.Teardown:
		dvol := db.DeletedVolume{VolumeID: a.VolumeID, AppID: string(dv.AppId), SizeBytes: vols[a.VolumeID].SizeBytes, DeletedAt: now}
		if err := d.db.MarkVolumeDeleted(ctx, dvol); err != nil {
			d.cfg.Logf("nibrunnerd: %v", err)
		}
		d.deleted[a.VolumeID] = dvol
		delete(vols, a.VolumeID)
	case plan.Provision:
		if _, ok := d.deleted[a.VolumeID]; ok {
			if err := d.db.UndeleteVolume(ctx, a.VolumeID); err == nil {
				delete(d.deleted, a.VolumeID)
			}
		}
	}
	if a.Kind != plan.Teardown {
		vols[a.VolumeID] = VolumeInfo{SizeBytes: plan.RoundSize(dv.SizeBytes), Path: d.deps.Volumes.Path(a.VolumeID)}
	}
}

// sleepConcurrency bounds how many guests are snapshotted at once: each
// sleep writes the guest's memory to disk.
const sleepConcurrency = 4

type retry struct {
	n    int
	next time.Time
}

// sleep puts apps to sleep, the longest idle first, a few at a time. A
// failed sleep leaves the guest up and is retried after a backoff that
// doubles up to five minutes.
func (d *Daemon) sleep(ctx context.Context, now time.Time, apps []string, vms map[string]vmm.Status) {
	if len(apps) == 0 {
		return
	}
	lastActive := func(app string) time.Time {
		t := d.record(app).StartedAt
		if d.deps.Traffic != nil {
			if last, _ := d.deps.Traffic.Activity(app); last.After(t) {
				t = last
			}
		}
		return t
	}
	sort.SliceStable(apps, func(i, j int) bool { return lastActive(apps[i]).Before(lastActive(apps[j])) })
	for _, app := range apps {
		d.stopProber(app)
	}
	errs := make([]error, len(apps))
	sem := make(chan struct{}, sleepConcurrency)
	var wg sync.WaitGroup
	for i, app := range apps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, opTimeout)
			defer cancel()
			errs[i] = d.deps.VMM.Sleep(cctx, app)
		}()
	}
	wg.Wait()
	for i, app := range apps {
		a := d.appOf(app)
		rec := a.rec
		if err := errs[i]; err != nil {
			r := &a.sleepRetry
			r.n++
			r.next = now.Add(min(time.Second<<min(r.n-1, 20), 5*time.Minute))
			rec.Message = fmt.Sprintf("could not be put to sleep, and stays up (next try in %s): %v", roundDur(r.next.Sub(now)), err)
			continue
		}
		a.sleepRetry = retry{}
		delete(vms, app)
		rec.Sleeping, rec.Message = true, ""
	}
}
