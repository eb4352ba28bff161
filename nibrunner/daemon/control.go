package daemon

import (
	"context"
	"errors"
	"fmt"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// ErrCannotSleep is returned by Sleep for an app that is not an up
// on-request app: only those have a sleep policy, and only a running
// guest has state to snapshot.
var ErrCannotSleep = errors.New("only a running on-request app can be put to sleep")

// Sleep puts an on-request app to sleep now, as if its sleep policy had
// fired: the same snapshot path the idle pass takes (so the next request's
// Wake restores it), without waiting for the idle timeout. It is for an
// operator or a caller outside the process (the control socket); an app
// already asleep is not an error. It marks the app wanted asleep and the
// planner decides, as for a wake; it returns once the app's worker has
// slept it. A sleep the VMM refuses (no room for the snapshot) leaves the
// guest up and says why.
func (d *Daemon) Sleep(ctx context.Context, app string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.instance(app)
	if in == nil {
		return fmt.Errorf("sleep %s: desired.json does not list it: %w", app, ErrCannotSleep)
	}
	if in.DesiredState != desired.StateOnRequest {
		return fmt.Errorf("sleep %s: desired.json asks it %s: %w", app, in.DesiredState, ErrCannotSleep)
	}
	a := d.apps[app]
	if a != nil && a.rec != nil && a.rec.Sleeping && !a.busy {
		return nil
	}
	if a == nil || a.rec == nil || !a.up() {
		return fmt.Errorf("sleep %s: it has no running guest: %w", app, ErrCannotSleep)
	}
	a.wantAsleep = true
	asked := false
	for {
		if d.workCtx.Err() != nil {
			return fmt.Errorf("sleep %s: %w", app, ErrClosed)
		}
		if !a.busy {
			if asked || !a.wantAsleep {
				break
			}
			o, _ := d.observedApp(a)
			x, ok := plan.App(d.doc, in, plan.Observed{Now: d.now(), Instances: map[string]plan.Instance{app: o}, Volumes: map[string]plan.Volume{string(in.VolumeId): {}}})
			if !ok || x.Kind != plan.Sleep {
				a.wantAsleep = false
				return fmt.Errorf("sleep %s: the planner does not put it to sleep now (%s): %w", app, x.Kind, ErrCannotSleep)
			}
			d.dispatch(x, nil, 0)
			asked = true
		}
		ch := a.wait()
		d.mu.Unlock()
		select {
		case <-ctx.Done():
			d.mu.Lock()
			a.wantAsleep = false
			return fmt.Errorf("sleep %s: %w", app, ctx.Err())
		case <-d.workCtx.Done():
		case <-ch:
		}
		d.mu.Lock()
	}
	if a.rec == nil || !a.rec.Sleeping {
		msg := "it did not go to sleep"
		if a.rec != nil && a.rec.Message != "" {
			msg = a.rec.Message
		}
		return fmt.Errorf("sleep %s: %s", app, msg)
	}
	return nil
}
