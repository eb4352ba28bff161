package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// freeDisk reads the free space of the disk volumes are made on, when the
// volume backend can say it; nil when it cannot (then no volume is held
// back for room). A failed read is logged once per message.
func (d *Daemon) freeDisk(ctx context.Context) *uint64 {
	s, ok := d.deps.Volumes.(VolumeSpace)
	if !ok {
		return nil
	}
	n, err := s.FreeBytes(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != d.freeErr {
			d.cfg.Logf("nibrunnerd: %s; volumes are made without checking for room until it can be read", msg)
			d.freeErr = msg
		}
		return nil
	}
	d.freeErr = ""
	return &n
}

// nextFailure is the failure a's attempt on dv, failed at now, is recorded
// as: one more in a row when the last failure was of that same attempt
// (its retry is plan.VolumeRetry over the count). Called with mu held.
func (d *Daemon) nextFailure(now time.Time, dv desired.DesiredVolume, a plan.VolumeAction) plan.VolumeFailure {
	f := plan.VolumeFailure{Kind: a.Kind, SizeBytes: a.SizeBytes, Seed: plan.SeedOf(dv), At: now, Count: 1}
	v := d.volOf(a.VolumeID)
	if prev := v.failure; v.failed && prev.Kind == f.Kind && prev.SizeBytes == f.SizeBytes && prev.Seed == f.Seed {
		f.Count = prev.Count + 1
	}
	return f
}
