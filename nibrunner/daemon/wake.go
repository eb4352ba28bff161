package daemon

import (
	"context"
	"errors"

	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/route"
)

// ErrClosed is what a wake or sleep of a daemon that is closing answers.
var ErrClosed = errors.New("the daemon is closing")

// Wake brings an on-request app up for a request and returns once its
// health check passes, so the activator can hand the caller on. It marks
// the app wanted awake and asks the planner about that one app; the app's
// worker acts at once, whatever a pass is doing, and its wake takes the
// next turn at the VM gate. Callers that arrive while a wake (or a boot)
// is under way share it: they wait on the same app's signal. A wake never
// spends the restart budget, and is refused (the activator answers 503)
// while memory is short. An app with no slot yet (its first boot) is the
// next pass's to start; when that pass holds the start back (every slot
// taken), the wake answers why instead of waiting for its context to end.
func (d *Daemon) Wake(ctx context.Context, app string) error {
	return d.apps.wake(ctx, app)
}

// wake is Daemon.Wake, on the app component (mu not held).
func (ps *apps) wake(ctx context.Context, app string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !plan.Wakeable(ps.host.instance(app), ps.host.docProblems()) {
		return explain.WakeEnded(app, route.ErrNotRunning)
	}
	a := ps.appOf(app)
	a.wantAwake = true
	// pass is the pass this wake waits for, when the app has no slot yet:
	// one that begins after the wake asked, gives the app a slot and
	// starts it, or says why not.
	var pass uint64
	for {
		end := plan.WakeNext(ps.wakeFacts(a, pass))
		if end.Release {
			a.wantAwake = false
		}
		switch end.Step {
		case plan.WakeClosed:
			return explain.WakeEnded(app, ErrClosed)
		case plan.WakeNotRunning:
			return explain.WakeEnded(app, route.ErrNotRunning)
		case plan.WakeUp:
			return nil
		case plan.WakeRefused:
			return explain.WakeAnswer(app, end.Why)
		case plan.WakeProbe:
			// Up without a prober (a sleep that failed, before the next
			// pass probes it again): the wake is its health check.
			ps.startProber(a, a.vm)
		case plan.WakeDecide:
			if why := ps.decide(a); why != "" {
				a.wantAwake = false
				return explain.WakeAnswer(app, why)
			}
		}
		begun, done, passed := ps.host.passes()
		if !a.hasSlot && !a.busy && pass <= done {
			pass = begun + 1
		}
		ch := a.wait()
		ps.mu.Unlock()
		select {
		case <-ctx.Done():
			ps.mu.Lock()
			return explain.WakeEnded(app, ctx.Err())
		case <-ps.host.stopping():
		case <-ch:
		case <-passed:
		}
		ps.mu.Lock()
	}
}

// wakeFacts is what the wake's rules (plan.WakeNext) read of app a, for a
// wake that waits for pass (0: none) (mu held).
func (ps *apps) wakeFacts(a *app, pass uint64) plan.WakeFacts {
	_, done, _ := ps.host.passes()
	f := plan.WakeFacts{
		Closing:      ps.host.closing(),
		Wakeable:     plan.Wakeable(ps.host.instance(a.id), ps.host.docProblems()),
		PassHeldBack: pass != 0 && done >= pass && !a.busy && !a.up() && !a.hasSlot,
		Busy:         a.busy, Up: a.up(), WantAwake: a.wantAwake,
		Failure: a.failure, HasSlot: a.hasSlot, HeldBack: a.heldBack,
	}
	if p := a.prober; p != nil {
		f.Probing = true
		f.Health, f.ProbeFailure = p.live()
	}
	return f
}

// decide asks the planner about app a alone, from what the daemon knows
// now, and hands the action to its worker (mu held). It returns why
// nothing could be done: the planner's refusal, or why admission held the
// start back.
func (ps *apps) decide(a *app) string {
	in := ps.host.instance(a.id)
	obs := ps.host.observeOne(ps.now(), a.id)
	x, refused := plan.WakeAction(ps.host.inForce(), in, obs)
	if x.Kind == plan.GiveUp {
		a.gaveUp()
	}
	if refused.Refused() {
		return explain.WakeRefused(refused)
	}
	if !a.hasSlot {
		// Its first boot: the pass gives it a slot and starts it.
		ps.host.Kick()
		return ""
	}
	a.note = ""
	given, held := ps.memoryInUse()
	need, ok := ps.admit(x, in, given, held)
	if !ok {
		return a.note
	}
	ps.dispatch(x, in, need)
	return ""
}

// Backend is host:port where app's guest answers now (the VMM's endpoint,
// as its health check reaches it), or "" when no guest is up or the VMM
// names none. The proxy asks after a wake: the route it holds was made
// while the app slept, and a woken guest may answer somewhere new (the
// fake VMM's guests listen on a fresh loopback port each start). It reads
// the published table and takes no lock.
func (d *Daemon) Backend(app string) string {
	return d.routes.table.Load().Backend(app)
}
