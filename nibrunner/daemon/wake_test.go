package daemon

import (
	"context"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestAWakeOfAnAppThatNeverHadASlotSaysWhyItsStartIsHeldBackRatherThanHang(t *testing.T) {
	h := newHost(t)
	h.maxApps = 1
	d, _, _ := h.start(t)
	b := h.app("b", "b1")
	h.write(t, doc(b))
	h.waitFor(t, "b running", allIn(reported.InstanceRunning, "b"))
	// a arrives when b holds the only slot: the passes hold its first boot
	// back, and it never gets a slot.
	h.write(t, doc(b, h.app("a", "a1", withState(desired.StateOnRequest))))
	const full = "waiting to be started: every slot of this host is taken (max_apps = 1)"
	h.waitFor(t, "a waiting for a slot", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a != nil && a.State == reported.InstancePending && a.Message == full
	})
	// Two requests at once share the wake, and both are told.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- d.Wake(ctx, "a") }()
	}
	for range 2 {
		err := <-errs
		if err == nil || ctx.Err() != nil {
			t.Fatalf("the wake of an app a pass holds back answered %v after its context ended (%v); it should say why it waits", err, ctx.Err())
		}
		if want := "wake a: " + full; err.Error() != want {
			t.Fatalf("the wake said %q, want %q", err, want)
		}
	}
}
