package metrics

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/vmm"
)

// Instrument wraps v so that its starts, wakes and sleeps are counted and
// timed: nibrunner_vm_start_duration_seconds (cold, restore),
// nibrunner_wakes_total and nibrunner_sleeps_total. What v may also do
// (vmm.Freezer, its logs) is found through the wrapper with vmm.As.
func Instrument(v vmm.VMM, m *Metrics) vmm.VMM {
	return &instrumented{VMM: v, m: m, now: time.Now}
}

type instrumented struct {
	vmm.VMM
	m   *Metrics
	now func() time.Time
}

// Unwrap returns the VMM that i counts (vmm.Wrapper).
func (i *instrumented) Unwrap() vmm.VMM { return i.VMM }

func (i *instrumented) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	began := i.now()
	st, err := i.VMM.Start(ctx, spec)
	if err == nil {
		i.m.vmStarted("cold", i.now().Sub(began))
	}
	return st, err
}

func (i *instrumented) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	began := i.now()
	st, err := i.VMM.Wake(ctx, spec)
	outcome, kind := "failed", "cold"
	if st.Restored {
		kind = "restore"
	}
	if err == nil {
		outcome = "cold"
		if st.Restored {
			outcome = "restored"
		}
		now := i.now()
		i.m.vmStarted(kind, now.Sub(began))
		i.m.history.Wake(spec.AppID, now, now.Sub(began))
	}
	i.m.wakes.WithLabelValues(spec.AppID, outcome).Inc()
	return st, err
}

func (i *instrumented) Sleep(ctx context.Context, app string) error {
	err := i.VMM.Sleep(ctx, app)
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	i.m.sleeps.WithLabelValues(app, outcome).Inc()
	return err
}
