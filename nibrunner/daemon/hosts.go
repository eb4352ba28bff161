package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// What the daemon's components ask of it (volumeHost, appHost). Each is
// a read of what the daemon holds, or a hand-off to another component;
// "mu held" is the components' contract, as in their interfaces.

var (
	_ volumeHost = (*Daemon)(nil)
	_ appHost    = (*Daemon)(nil)
)

// inForce is the accepted document (mu held).
func (d *Daemon) inForce() *desired.HostDesiredState { return d.acc.doc }

// docProblems says why instances are failed by the document itself (mu
// held).
func (d *Daemon) docProblems() map[string]string { return d.acc.problems }

// observeOne is what the planner reads of app id and its volume (mu held).
func (d *Daemon) observeOne(now time.Time, id string) plan.Observed {
	return d.observed(now, id, nil, nil)
}

// network says whether the network has its rules, and why not (mu held).
func (d *Daemon) network() (bool, string) { return d.routes.netReady, d.routes.netErr }

// volumeReady says whether a guest may start on volume id now (mu held).
func (d *Daemon) volumeReady(id string, now time.Time) (bool, string) {
	return d.vols.ready(id, now)
}

// passes are the passes begun and the last one ended, and the channel
// closed when the running (or next) pass ends (mu held).
func (d *Daemon) passes() (begun, done uint64, passed <-chan struct{}) {
	return d.loop.begun, d.loop.done, d.loop.passed
}

// routesChanged asks the route applier to hand over what was published.
func (d *Daemon) routesChanged() { d.routes.changed() }

// stopping is closed once Close began.
func (d *Daemon) stopping() <-chan struct{} { return d.mgr.Stopping() }

// takeDownForGrow takes down the guests on volume id that its grow needs
// down: the apps' business, asked by the volumes' worker.
func (d *Daemon) takeDownForGrow(ctx context.Context, id string) {
	d.apps.takeDownForGrow(ctx, id)
}
