package daemon

import (
	"context"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
)

// Wake brings an on-request app up for a request and returns once its
// health check passes, so the activator can hand the caller on. Callers
// that arrive while a wake is under way share it: they find the guest up
// and wait on the same health check. A wake never spends the restart
// budget, and waits (pending) like any start when memory is short.
func (d *Daemon) Wake(ctx context.Context, app string) error {
	p, err := d.wakeLocked(ctx, app)
	if err != nil {
		return err
	}
	d.Kick()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		switch s := p.record().State; s {
		case health.Running:
			return nil
		case health.Failed, health.Unhealthy:
			return fmt.Errorf("wake %s: %s", app, p.failureMessage())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wake %s: %w", app, ctx.Err())
		case <-p.done:
			return fmt.Errorf("wake %s: the guest went down while waking", app)
		case <-tick.C:
		}
	}
}

func (d *Daemon) wakeLocked(ctx context.Context, app string) (*prober, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.instance(app)
	if in == nil || in.DesiredState == desired.StateStopped || d.problems[app] != "" {
		return nil, fmt.Errorf("wake %s: %w", app, route.ErrNotRunning)
	}
	if p := d.appOf(app).prober; p != nil {
		return p, nil
	}
	if rec := d.record(app); rec != nil && rec.DeploymentID == string(in.DeploymentId) && rec.Budget.Exhausted {
		return nil, fmt.Errorf("wake %s: it is out of restarts until a new deploymentId", app)
	}
	list, err := d.deps.VMM.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("wake %s: %w", app, err)
	}
	vms := map[string]vmm.Status{}
	var inUse uint64
	for _, st := range list {
		vms[st.AppID] = st
		if st.State == vmm.Running {
			if rec := d.record(st.AppID); rec != nil {
				inUse += rec.MemoryMiB
			}
		}
	}
	if st, ok := vms[app]; ok && st.State == vmm.Exited {
		return nil, fmt.Errorf("wake %s: it failed and waits for its restart", app)
	}
	vols, err := d.deps.Volumes.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("wake %s: %w", app, err)
	}
	d.note(app, "", false)
	if _, ok := d.bringUp(ctx, d.cfg.Now().UTC(), plan.InstanceAction{Kind: plan.Wake, AppID: app}, in, vms, vols, inUse); !ok {
		return nil, fmt.Errorf("wake %s: %s", app, d.apps[app].note)
	}
	return d.apps[app].prober, nil
}

// Backend is host:port where app's guest answers now (the VMM's endpoint,
// as its health check reaches it), or "" when no guest is up or the VMM
// names none. The proxy asks after a wake: the route it holds was made
// while the app slept, and a woken guest may answer somewhere new (the
// fake VMM's guests listen on a fresh loopback port each start).
func (d *Daemon) Backend(app string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a := d.apps[app]; a != nil && a.prober != nil {
		return a.prober.endpoint
	}
	return ""
}
