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
// so it stays in memory until the app has one.
func (d *Daemon) persist(ctx context.Context, now time.Time) error {
	var ch db.Change
	for app, a := range d.apps {
		rec := a.rec
		if rec == nil || !a.hasSlot {
			continue
		}
		b := rec.encode()
		if !bytes.Equal(b, a.persisted) {
			ch.Put = append(ch.Put, db.Record{AppID: app, DeploymentID: rec.DeploymentID, Data: b})
		}
	}
	ch.Delete = d.forgotten
	if err := d.db.Apply(ctx, ch); err != nil {
		return err
	}
	for _, r := range ch.Put {
		d.apps[r.AppID].persisted = r.Data
	}
	d.forgotten = nil
	return d.flushMeters(ctx, now.Sub(d.lastFlush) >= 30*time.Second)
}

func (d *Daemon) flushMeters(ctx context.Context, due bool) error {
	if !due {
		return nil
	}
	meters := make(map[string]db.Meters, len(d.apps))
	for app, a := range d.apps {
		if a.metered {
			meters[app] = a.meters
		}
	}
	if len(meters) == 0 {
		return nil
	}
	if err := d.db.Apply(ctx, db.Change{Meters: meters}); err != nil {
		return err
	}
	d.lastFlush = d.cfg.Now()
	return nil
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
	for app, a := range d.apps {
		rec := a.rec
		if rec == nil {
			continue
		}
		m := a.meters
		st, up := vms[app]
		up = up && st.State == vmm.Running
		switch {
		case up:
			m.RunningMs += delta
		case rec.Sleeping || rec.Booted && d.byApp[app] != nil && d.byApp[app].DesiredState == desired.StateOnRequest:
			// Asleep, or booted once and waiting for a request.
			m.IdleMs += delta
		}
		if up && budget > 0 && now.Sub(a.measured.at) >= 15*time.Second {
			budget--
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			meas, err := d.deps.VMM.Measure(cctx, app)
			cancel()
			if err == nil {
				prev := a.measured
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
				a.measured = measurement{m: meas, pid: st.PID, cpu: meas.CPUTime, rx: meas.RxBytes, tx: meas.TxBytes, at: now}
			}
		}
		a.meters, a.metered = m, true
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
