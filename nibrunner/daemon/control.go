package daemon

import (
	"context"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
)

// ErrCannotSleep is returned by Sleep for an app that is not an up
// on-request app: only those have a sleep policy, and only a running
// guest has state to snapshot.
var ErrCannotSleep = explain.ErrCannotSleep

// Accepted is the document the daemon accepted and converges on, nil
// before it accepted one: never one it refused. The control socket reads
// it; callers must not change it.
func (d *Daemon) Accepted() *desired.HostDesiredState {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.acc.doc
}

// Sleep puts an on-request app to sleep now, as if its sleep policy had
// fired: the same snapshot path the idle pass takes (so the next request's
// Wake restores it), without waiting for the idle timeout. It is for an
// operator or a caller outside the process (the control socket); an app
// already asleep is not an error. It marks the app wanted asleep and the
// planner decides, as for a wake; it returns once the app's worker has
// slept it. A sleep the VMM refuses (no room for the snapshot) leaves the
// guest up and says why.
func (d *Daemon) Sleep(ctx context.Context, app string) error {
	return d.apps.sleep(ctx, app)
}

// sleep is Daemon.Sleep, on the app component (mu not held).
func (ps *apps) sleep(ctx context.Context, app string) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	in := ps.host.instance(app)
	if in == nil {
		return explain.SleepRefused(app, explain.MsgSleepUnlisted)
	}
	if in.DesiredState != desired.StateOnRequest {
		return explain.SleepRefused(app, explain.SleepAskedState(in.DesiredState))
	}
	a := ps.byID[app]
	if a != nil && a.rec != nil && a.rec.Sleeping && !a.busy {
		return nil
	}
	if a == nil || a.rec == nil || !a.up() {
		return explain.SleepRefused(app, explain.MsgSleepNoGuest)
	}
	a.wantAsleep = true
	asked := false
	for {
		if ps.host.closing() {
			return explain.SleepEnded(app, ErrClosed)
		}
		if !a.busy {
			if asked || !a.wantAsleep {
				break
			}
			x, ok := plan.App(ps.host.inForce(), in, ps.host.observeOne(ps.now(), app))
			if !ok || x.Kind != plan.Sleep {
				a.wantAsleep = false
				return explain.SleepRefused(app, explain.SleepNotNow(x.Kind))
			}
			ps.dispatch(x, nil, 0)
			asked = true
		}
		ch := a.wait()
		ps.mu.Unlock()
		select {
		case <-ctx.Done():
			ps.mu.Lock()
			a.wantAsleep = false
			return explain.SleepEnded(app, ctx.Err())
		case <-ps.host.stopping():
		case <-ch:
		}
		ps.mu.Lock()
	}
	if a.rec == nil || !a.rec.Sleeping {
		msg := ""
		if a.rec != nil {
			msg = a.rec.Message
		}
		return explain.SleepNotDone(app, msg)
	}
	return nil
}
