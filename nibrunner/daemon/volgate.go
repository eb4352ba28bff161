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
func (vs *volumes) freeDisk(ctx context.Context) *uint64 {
	s, ok := vs.backend.(VolumeSpace)
	if !ok {
		return nil
	}
	n, err := s.FreeBytes(ctx)
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != vs.freeErr {
			vs.logf("nibrunnerd: %s; volumes are made without checking for room until it can be read", msg)
			vs.freeErr = msg
		}
		return nil
	}
	vs.freeErr = ""
	return &n
}

// nextFailure is the failure a's attempt on dv, failed at now, is recorded
// as: one more in a row when the last failure was of that same attempt
// (its retry is plan.VolumeRetry over the count). Called with mu held.
func (vs *volumes) nextFailure(now time.Time, dv desired.DesiredVolume, a plan.VolumeAction) plan.VolumeFailure {
	f := plan.VolumeFailure{Kind: a.Kind, SizeBytes: a.SizeBytes, Seed: plan.SeedOf(dv), At: now, Count: 1}
	v := vs.of(a.VolumeID)
	if prev := v.failure; v.failed && prev.Kind == f.Kind && prev.SizeBytes == f.SizeBytes && prev.Seed == f.Seed {
		f.Count = prev.Count + 1
	}
	return f
}
