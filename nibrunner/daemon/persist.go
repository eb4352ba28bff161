package daemon

import (
	"bytes"
	"context"
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/vmm"
)

// persist writes the records that changed and forgets the forgotten, in
// one transaction; meters go at most every 30 s (they are monotonic, so a
// crash loses at most that much counting). Slots are written before
// records (the database refuses the other order): an app still waiting for
// its first slot has a fresh record that says nothing a restart would miss,
// so it stays in memory until the app has one. An app whose worker is busy
// is persisted by the pass after it commits. The change is made under the
// lock and written outside it.
func (d *Daemon) persist(ctx context.Context, now time.Time) error {
	var ch db.Change
	d.mu.Lock()
	for app, a := range d.apps {
		rec := a.rec
		if rec == nil || !a.hasSlot || a.busy {
			continue
		}
		b := rec.encode()
		if !bytes.Equal(b, a.persisted) {
			ch.Put = append(ch.Put, db.Record{AppID: app, DeploymentID: rec.DeploymentID, Data: b})
		}
	}
	ch.Delete, d.forgotten = d.forgotten, nil
	var meters map[string]db.Meters
	if now.Sub(d.lastFlush) >= 30*time.Second {
		meters = d.metersToFlush()
	}
	d.mu.Unlock()

	err := d.db.Apply(ctx, ch)
	d.mu.Lock()
	if err != nil {
		d.forgotten = append(ch.Delete, d.forgotten...)
	} else {
		for _, r := range ch.Put {
			if a := d.apps[r.AppID]; a != nil {
				a.persisted = r.Data
			}
		}
	}
	d.mu.Unlock()
	if err != nil {
		return err
	}
	return d.writeMeters(ctx, meters)
}

// metersToFlush is every app's meters (mu held).
func (d *Daemon) metersToFlush() map[string]db.Meters {
	meters := make(map[string]db.Meters, len(d.apps))
	for app, a := range d.apps {
		if a.metered {
			meters[app] = a.meters
		}
	}
	return meters
}

func (d *Daemon) writeMeters(ctx context.Context, meters map[string]db.Meters) error {
	if len(meters) == 0 {
		return nil
	}
	if err := d.db.Apply(ctx, db.Change{Meters: meters}); err != nil {
		return err
	}
	d.mu.Lock()
	d.lastFlush = d.now()
	d.mu.Unlock()
	return nil
}

// measureEvery is how often a guest up is measured; measureBudget bounds
// the measurements of one pass.
const (
	measureEvery  = 15 * time.Second
	measureBudget = 64
)

// account grows the meters: running time for guests up, idle time for
// sleepers, and CPU and bytes from measurements (at most every 15 s per
// guest, a bounded number per pass, taken outside the lock).
func (d *Daemon) account(ctx context.Context, now time.Time) {
	type target struct {
		app string
		pid int
	}
	var due []target
	d.mu.Lock()
	delta := uint64(0)
	if !d.lastPass.IsZero() {
		delta = uint64(min(now.Sub(d.lastPass), time.Minute).Milliseconds())
	}
	for app, a := range d.apps {
		rec := a.rec
		if rec == nil {
			continue
		}
		m := a.meters
		up := a.up()
		switch {
		case up:
			m.RunningMs += delta
		case rec.Sleeping || rec.Booted && d.byApp[app] != nil && d.byApp[app].DesiredState == desired.StateOnRequest:
			// Asleep, or booted once and waiting for a request.
			m.IdleMs += delta
		}
		a.meters, a.metered = m, true
		if up && len(due) < measureBudget && now.Sub(a.measured.at) >= measureEvery {
			due = append(due, target{app, a.vm.PID})
		}
	}
	d.mu.Unlock()

	for _, t := range due {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		meas, err := d.deps.VMM.Measure(cctx, t.app)
		cancel()
		if err != nil {
			continue
		}
		d.mu.Lock()
		if a := d.apps[t.app]; a != nil {
			a.measure(meas, t.pid, now)
		}
		d.mu.Unlock()
	}
}

// measure adds what grew since a's last measurement of the same guest.
func (a *app) measure(meas vmm.Measurement, pid int, now time.Time) {
	prev, m := a.measured, &a.meters
	if prev.pid == pid {
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
	a.measured = measurement{m: meas, pid: pid, cpu: meas.CPUTime, rx: meas.RxBytes, tx: meas.TxBytes, at: now}
}
