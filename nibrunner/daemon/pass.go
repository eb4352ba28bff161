package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/volume"
)

// opTimeout bounds one adapter call inside a pass, so one stuck guest
// cannot hold up the host.
const opTimeout = 60 * time.Second

// Pass runs one observe → plan → apply → persist → report cycle.
func (d *Daemon) Pass(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.cfg.Now().UTC()
	clear(d.notes)
	clear(d.failedNotes)

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
		rec := d.records[app]
		if rec == nil || rec.DeploymentID != st.DeploymentID {
			rec = &record{AppID: app, DeploymentID: st.DeploymentID, Booted: true,
				Health: health.Started(st.StartedAt), StartedAt: st.StartedAt,
				Budget: backoff.Budget{DeploymentID: st.DeploymentID, LastStart: st.StartedAt}}
			if in := d.instance(app); in != nil && string(in.DeploymentId) == st.DeploymentID {
				rec.VolumeID = string(in.VolumeId)
				rec.MemoryMiB = uint64(in.Config.Resources.MemoryMib)
			}
			if old := d.records[app]; old != nil && old.VolumeID != "" && rec.VolumeID == "" {
				rec.VolumeID = old.VolumeID
			}
			d.records[app] = rec
		}
		switch st.State {
		case vmm.Running:
			rec.Sleeping = false
			if d.probers[app] == nil {
				d.startProber(app, rec, st)
			}
			if p := d.probers[app]; p != nil {
				rec.Health = p.record()
				switch {
				case (rec.Health.State == health.Failed || rec.Health.State == health.Unhealthy) && rec.FailedAt.IsZero():
					rec.FailedAt = now
					rec.FailReason = p.failureMessage()
				case rec.Health.State == health.Running && !rec.FailedAt.IsZero():
					// It answered again before its restart came due.
					rec.FailedAt, rec.FailReason = time.Time{}, ""
					delete(d.timers, app)
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
	for app := range d.probers {
		if st, ok := vms[app]; !ok || st.State != vmm.Running {
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
		Instances:   make(map[string]plan.Instance, len(d.records)),
		Volumes:     make(map[string]plan.Volume, len(vols)),
		Checkpoints: make(map[string]bool, len(cps)),
		Exports:     make(map[string]bool, len(exps)),
		Problems:    d.problems,
	}
	for app, rec := range d.records {
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

// apply carries out a plan: first everything that takes guests down, then
// volumes, then everything that brings guests up, then checkpoints and
// exports. An action that fails is reported and retried by a later pass.
func (d *Daemon) apply(ctx context.Context, now time.Time, acts plan.Actions, vms map[string]vmm.Status, vols map[string]VolumeInfo, cps map[string]CheckpointInfo, exps map[string]ExportInfo) {
	var ups []plan.InstanceAction
	var sleeps []string
	for _, a := range acts.Instances {
		rec := d.records[a.AppID]
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
			if r, ok := d.sleepRetry[a.AppID]; ok && now.Before(r.next) {
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
			if rec := d.records[app]; rec != nil {
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

	for _, c := range acts.Checkpoints {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		var err error
		if c.Create {
			var info CheckpointInfo
			info, err = d.deps.Checkpoints.Create(cctx, c.CheckpointID, c.VolumeID, d.deps.Volumes.Path(c.VolumeID))
			if err == nil {
				cps[c.CheckpointID] = info
			}
		} else {
			err = d.deps.Checkpoints.Delete(cctx, c.CheckpointID)
			if err == nil {
				delete(cps, c.CheckpointID)
			}
		}
		cancel()
		what := "could not be made"
		if !c.Create {
			what = "could not be deleted"
		}
		setErr(d.cpErr, c.CheckpointID, what, err)
	}
	for _, e := range acts.Exports {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		var err error
		if e.Write {
			for _, de := range d.doc.Exports {
				if string(de.ExportId) == e.ExportID {
					var info ExportInfo
					info, err = d.deps.Exports.Write(cctx, de, d.deps.Volumes.Path(string(de.VolumeId)))
					if err == nil {
						exps[e.ExportID] = info
					}
				}
			}
		} else {
			err = d.deps.Exports.Forget(cctx, e.ExportID)
			if err == nil {
				delete(exps, e.ExportID)
			}
		}
		cancel()
		what := "could not be written"
		if !e.Write {
			what = "could not be forgotten"
		}
		setErr(d.expErr, e.ExportID, what, err)
	}
}

// setErr records the sentence reported for id: what could not be done,
// why, and that the next pass tries again (every pass re-plans it).
func setErr(m map[string]string, id, what string, err error) {
	if err != nil {
		m[id] = what + " (the next pass tries again): " + err.Error()
	} else {
		delete(m, id)
	}
}

// takeDown stops app's guest (and, when discard, drops its snapshot).
func (d *Daemon) takeDown(ctx context.Context, app string, vms map[string]vmm.Status, discard bool) {
	d.stopProber(app)
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	if err := d.deps.VMM.Stop(cctx, app); err != nil {
		d.cfg.Logf("nibrunnerd: stop %s: %v", app, err)
		if rec := d.records[app]; rec != nil {
			rec.Message = "could not be stopped: " + err.Error()
		}
		return
	}
	delete(vms, app)
	if rec := d.records[app]; rec != nil {
		rec.Message = ""
	}
	if discard {
		if err := d.deps.VMM.Discard(cctx, app); err != nil {
			d.cfg.Logf("nibrunnerd: discard the snapshot of %s: %v", app, err)
		}
	}
}

func (d *Daemon) forget(ctx context.Context, app string) {
	delete(d.records, app)
	delete(d.timers, app)
	delete(d.measured, app)
	delete(d.sleepRetry, app)
	d.forgotten = append(d.forgotten, app)
	if _, ok := d.slots[app]; ok {
		if err := d.db.ReleaseSlot(ctx, app); err != nil {
			d.cfg.Logf("nibrunnerd: %v", err)
		} else {
			delete(d.slots, app)
		}
	}
	delete(d.meters, app)
}

// restartDue consults the restart budget of a failed app: it marks the app
// out of restarts when the budget is spent, schedules a pass for when the
// backoff ends, and says whether the restart may happen now.
func (d *Daemon) restartDue(app string, now time.Time) bool {
	rec := d.records[app]
	in := d.instance(app)
	if rec == nil || in == nil {
		return false
	}
	if rec.FailedAt.IsZero() {
		rec.FailedAt = now
	}
	rec.Budget = rec.Budget.ForDeployment(rec.DeploymentID)
	dec := policyOf(in).Next(rec.Budget, rec.FailedAt, now)
	if dec.OutOfRestarts {
		rec.Budget = rec.Budget.Exhaust()
		delete(d.timers, app)
		return false
	}
	if now.Before(dec.At) {
		d.timers[app] = dec.At
		return false
	}
	delete(d.timers, app)
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
		for app, rec := range d.records {
			if rec.VolumeID == a.VolumeID {
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

// persist writes the records that changed and forgets the forgotten, in
// one transaction; meters go at most every 30 s (they are monotonic, so a
// crash loses at most that much counting). Slots are written before
// records (the database refuses the other order): an app still waiting for
// its first slot has a fresh record that says nothing a restart would miss,
// so it stays in memory until the app has one.
func (d *Daemon) persist(ctx context.Context, now time.Time) error {
	var ch db.Change
	for app, rec := range d.records {
		if _, ok := d.slots[app]; !ok {
			continue
		}
		b := rec.encode()
		if !bytes.Equal(b, d.persisted[app]) {
			ch.Put = append(ch.Put, db.Record{AppID: app, DeploymentID: rec.DeploymentID, Data: b})
		}
	}
	ch.Delete = d.forgotten
	if err := d.db.Apply(ctx, ch); err != nil {
		return err
	}
	for _, r := range ch.Put {
		d.persisted[r.AppID] = r.Data
	}
	for _, app := range d.forgotten {
		delete(d.persisted, app)
	}
	d.forgotten = nil
	return d.flushMeters(ctx, now.Sub(d.lastFlush) >= 30*time.Second)
}

func (d *Daemon) flushMeters(ctx context.Context, due bool) error {
	if !due || len(d.meters) == 0 {
		return nil
	}
	if err := d.db.Apply(ctx, db.Change{Meters: d.meters}); err != nil {
		return err
	}
	d.lastFlush = d.cfg.Now()
	return nil
}

// routeAndNetwork hands the router and the network their whole tables,
// only when they changed.
func (d *Daemon) routeAndNetwork(ctx context.Context, vms map[string]vmm.Status) {
	var nets []NetSlot
	var routes []Route
	if d.doc != nil {
		for i := range d.doc.Instances {
			in := &d.doc.Instances[i]
			app := string(in.AppId)
			n, ok := d.slots[app]
			if !ok {
				continue
			}
			st, up := vms[app]
			up = up && st.State == vmm.Running
			nets = append(nets, NetSlot{AppID: app, Slot: n, Network: slot.Network(n), HTTPPort: int(in.Config.HttpPort), Ports: ports(in, n), Forward: up})
			state := RouteDown
			rec := d.records[app]
			var addr string
			if up {
				addr = st.Endpoint
			}
			switch {
			case up && d.answering(app):
				state = RouteUp
			case up && in.DesiredState != desired.StateStopped:
				// Booting: the activator waits on Wake, which joins this
				// boot's prober, rather than proxying to a guest that does
				// not listen yet (a 502).
				state = RouteSleeping
			case in.DesiredState == desired.StateOnRequest && rec != nil && rec.Booted:
				state = RouteSleeping
			}
			for _, h := range in.Hostnames {
				routes = append(routes, Route{Hostname: string(h.Hostname), AppID: app, HostPort: slot.HostPort(n), Addr: addr, State: state})
			}
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Hostname < routes[j].Hostname })
	if !d.netReady || !reflect.DeepEqual(nets, d.lastNet) {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		err := d.deps.Network.Apply(cctx, nets)
		cancel()
		if err != nil {
			d.netErr = err.Error()
			d.cfg.Logf("nibrunnerd: apply the network rules: %v", err)
		} else {
			d.netReady, d.netErr, d.lastNet = true, "", nets
		}
	}
	if !reflect.DeepEqual(routes, d.lastRoute) {
		if err := d.deps.Router.Apply(ctx, routes); err != nil {
			d.cfg.Logf("nibrunnerd: apply the routes: %v", err)
		} else {
			d.lastRoute = routes
		}
	}
}

// answering tells whether app's guest has passed its health check: its
// prober says running, or unhealthy (it answered once and may still).
func (d *Daemon) answering(app string) bool {
	p := d.probers[app]
	if p == nil {
		return false
	}
	s := p.record().State
	return s == health.Running || s == health.Unhealthy
}

func ports(in *desired.DesiredInstance, n int) []vmm.Port {
	out := make([]vmm.Port, 0, len(in.Config.Ports))
	for i, p := range in.Config.Ports {
		out = append(out, vmm.Port{Name: string(p.Name), GuestPort: int(p.GuestPort), HostPort: slot.HostPort(n) + 1 + i})
	}
	return out
}

// account grows the meters: running time for guests up, idle time for
// sleepers, and CPU and bytes from measurements (at most every 15 s per
// guest, a bounded number per pass).
func (d *Daemon) account(ctx context.Context, now time.Time, vms map[string]vmm.Status) {
	delta := uint64(0)
	if !d.lastPass.IsZero() {
		delta = uint64(min(now.Sub(d.lastPass), time.Minute).Milliseconds())
	}
	budget := 64
	for app, rec := range d.records {
		m := d.meters[app]
		st, up := vms[app]
		up = up && st.State == vmm.Running
		switch {
		case up:
			m.RunningMs += delta
		case rec.Sleeping || rec.Booted && d.byApp[app] != nil && d.byApp[app].DesiredState == desired.StateOnRequest:
			// Asleep, or booted once and waiting for a request.
			m.IdleMs += delta
		}
		if up && budget > 0 && now.Sub(d.measured[app].at) >= 15*time.Second {
			budget--
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			meas, err := d.deps.VMM.Measure(cctx, app)
			cancel()
			if err == nil {
				prev := d.measured[app]
				if prev.pid == st.PID {
					if meas.CPUTime > prev.cpu {
						m.CpuMs += uint64((meas.CPUTime - prev.cpu).Milliseconds())
					}
					if meas.RxBytes > prev.rx {
						m.RxBytes += meas.RxBytes - prev.rx
					}
					if meas.TxBytes > prev.tx {
						m.TxBytes += meas.TxBytes - prev.tx
					}
				}
				d.measured[app] = measurement{m: meas, pid: st.PID, cpu: meas.CPUTime, rx: meas.RxBytes, tx: meas.TxBytes, at: now}
			}
		}
		if d.meters == nil {
			d.meters = map[string]db.Meters{}
		}
		d.meters[app] = m
	}
}

// measureVolumes reads the fill of volumes not measured for a minute, a
// bounded number per pass, when the backend can measure.
func (d *Daemon) measureVolumes(ctx context.Context, now time.Time, vols map[string]VolumeInfo) {
	u, ok := d.deps.Volumes.(VolumeUsage)
	if !ok {
		return
	}
	budget := 64
	for id := range vols {
		if budget == 0 {
			break
		}
		if last, ok := d.usage[id]; ok && now.Sub(last.MeasuredAt) < time.Minute {
			continue
		}
		budget--
		got, err := u.Usage(ctx, id)
		if err != nil {
			continue
		}
		got.MeasuredAt = now
		d.usage[id] = got
	}
	for id := range d.usage {
		if _, ok := vols[id]; !ok {
			delete(d.usage, id)
		}
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
		t := d.records[app].StartedAt
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
		rec := d.records[app]
		if err := errs[i]; err != nil {
			r := d.sleepRetry[app]
			r.n++
			r.next = now.Add(min(time.Second<<min(r.n-1, 20), 5*time.Minute))
			d.sleepRetry[app] = r
			rec.Message = fmt.Sprintf("could not be put to sleep, and stays up (next try in %s): %v", roundDur(r.next.Sub(now)), err)
			continue
		}
		delete(d.sleepRetry, app)
		delete(vms, app)
		rec.Sleeping, rec.Message = true, ""
	}
}
