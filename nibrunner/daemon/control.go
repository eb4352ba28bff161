package daemon

import (
	"context"
	"errors"
	"fmt"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/vmm"
)

// ErrCannotSleep is returned by Sleep for an app that is not an up
// on-request app: only those have a sleep policy, and only a running
// guest has state to snapshot.
var ErrCannotSleep = errors.New("only a running on-request app can be put to sleep")

// Sleep puts an on-request app to sleep now, as if its sleep policy had
// fired: the same snapshot path the idle pass takes (so the next request's
// Wake restores it), without waiting for the idle timeout. It is for an
// operator or a caller outside the process (the control socket); an app
// already asleep is not an error. A sleep the VMM refuses (no room for the
// snapshot) leaves the guest up and says why.
func (d *Daemon) Sleep(ctx context.Context, app string) error {
	d.mu.Lock()
	err := d.sleepNow(ctx, app)
	d.mu.Unlock()
	if err != nil {
		return err
	}
	// The next pass persists the record and reports the app idle.
	d.Kick()
	return nil
}

func (d *Daemon) sleepNow(ctx context.Context, app string) error {
	in := d.instance(app)
	if in == nil {
		return fmt.Errorf("sleep %s: desired.json does not list it: %w", app, ErrCannotSleep)
	}
	if in.DesiredState != desired.StateOnRequest {
		return fmt.Errorf("sleep %s: desired.json asks it %s: %w", app, in.DesiredState, ErrCannotSleep)
	}
	rec := d.record(app)
	if rec != nil && rec.Sleeping {
		return nil
	}
	list, err := d.deps.VMM.List(ctx)
	if err != nil {
		return fmt.Errorf("sleep %s: listing guests: %w", app, err)
	}
	vms := map[string]vmm.Status{}
	for _, st := range list {
		vms[st.AppID] = st
	}
	if st, ok := vms[app]; !ok || st.State != vmm.Running || rec == nil {
		return fmt.Errorf("sleep %s: it has no running guest: %w", app, ErrCannotSleep)
	}
	d.sleep(ctx, d.cfg.Now().UTC(), []string{app}, vms)
	if !rec.Sleeping {
		return fmt.Errorf("sleep %s: %s", app, rec.Message)
	}
	return nil
}
