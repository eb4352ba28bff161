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
func (ps *apps) persist(ctx context.Context, now time.Time) error {
	var ch db.Change
	ps.mu.Lock()
	for app, a := range ps.byID {
		rec := a.rec
		if rec == nil || !a.hasSlot || a.busy {
			continue
		}
		b := rec.encode()
		if !bytes.Equal(b, a.persisted) {
			ch.Put = append(ch.Put, db.Record{AppID: app, DeploymentID: rec.DeploymentID, Data: b})
		}
	}
	ch.Delete, ps.forgotten = ps.forgotten, nil
	var meters map[string]db.Meters
	if now.Sub(ps.lastFlush) >= 30*time.Second {
		meters = ps.metersToFlush()
	}
	ps.mu.Unlock()

	err := ps.db.Apply(ctx, ch)
	ps.mu.Lock()
	if err != nil {
		ps.forgotten = append(ch.Delete, ps.forgotten...)
	} else {
		for _, r := range ch.Put {
			if a := ps.byID[r.AppID]; a != nil {
				a.persisted = r.Data
			}
		}
	}
	ps.mu.Unlock()
	if err != nil {
		return err
	}
	return ps.writeMeters(ctx, meters)
}

// metersToFlush is every app's meters (mu held).
func (ps *apps) metersToFlush() map[string]db.Meters {
	meters := make(map[string]db.Meters, len(ps.byID))
	for app, a := range ps.byID {
		if a.metered {
			meters[app] = a.meters
		}
	}
	return meters
}

func (ps *apps) writeMeters(ctx context.Context, meters map[string]db.Meters) error {
	if len(meters) == 0 {
		return nil
	}
	if err := ps.db.Apply(ctx, db.Change{Meters: meters}); err != nil {
		return err
	}
	ps.mu.Lock()
	ps.lastFlush = ps.now()
	ps.mu.Unlock()
	return nil
}

// measureEvery is how often a guest up is measured; measureBudget bounds
// the measurements of one pass.
const (
	measureEvery  = 15 * time.Second
	measureBudget = 64
)

// account grows the meters: running time for guests up, idle time for
// sleepers since lastPass, and CPU and bytes from measurements (at most every 15 s per
// guest, a bounded number per pass, taken outside the lock).
func (ps *apps) account(ctx context.Context, now, lastPass time.Time) {
	type target struct {
		app string
		pid int
	}
	var due []target
	ps.mu.Lock()
	delta := uint64(0)
	if !lastPass.IsZero() {
		delta = uint64(min(now.Sub(lastPass), time.Minute).Milliseconds())
	}
	for app, a := range ps.byID {
		rec := a.rec
		if rec == nil {
			continue
		}
		m := a.meters
		up := a.up()
		switch {
		case up:
			m.RunningMs += delta
		case rec.Sleeping || rec.Booted && ps.host.instance(app) != nil && ps.host.instance(app).DesiredState == desired.StateOnRequest:
			// Asleep, or booted once and waiting for a request.
			m.IdleMs += delta
		}
		a.meters, a.metered = m, true
		if up && len(due) < measureBudget && now.Sub(a.measured.at) >= measureEvery {
			due = append(due, target{app, a.vm.PID})
		}
	}
	ps.mu.Unlock()

	for _, t := range due {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		meas, err := ps.deps.VMM.Measure(cctx, t.app)
		cancel()
		if err != nil {
			continue
		}
		ps.mu.Lock()
		if a := ps.byID[t.app]; a != nil {
			a.measure(meas, t.pid, now)
		}
		ps.mu.Unlock()
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
