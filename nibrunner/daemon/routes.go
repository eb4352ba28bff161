package daemon

import (
	"context"
	"reflect"

	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
)

// routeApplier hands the router and the raw relay the table last
// published, from a goroutine of its own. Binding a raw port, or a router
// that is slow to take a table, keeps no lock that a pass, a commit, a
// prober or a wake takes: they publish under mu and ask (changed), and
// the applier reads the newest table when it gets to it, so the newest
// table wins and the tables in between may be skipped. A table the router
// or the relay refused is handed again at the next ask (every pass asks).
type routeApplier struct {
	// ask is the applier's doorbell (changed); made before it runs.
	ask chan struct{}
	// table is what the request path reads: routes and backends. It is
	// swapped atomically (under mu, by publishLocked) and read without
	// a lock.
	table route.Published
	// raw are the raw ports last published (mu).
	raw []route.Port
	// netReady says the network took the rules of lastNet, the apps'
	// slots as last handed to it; netErr is why it did not (mu).
	netReady bool
	netErr   string
	lastNet  []network.App
	// applied and lastPorts are what the router and the relay last took
	// (nil until they took one); only the applier's goroutine reads or
	// writes them.
	applied   *route.Table
	lastPorts []route.Port
}

// run is the applier's component (Daemon.components): it applies what
// was asked until ctx ends.
func (r *routeApplier) run(d *Daemon) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-r.ask:
			}
			r.apply(ctx, d)
		}
	}
}

// changed asks the applier to hand over what was published; it never
// waits.
func (r *routeApplier) changed() {
	select {
	case r.ask <- struct{}{}:
	default: // asked already: the applier reads the newest table
	}
}

// apply gives the router the published routes and the relay the raw
// ports, each when it has not taken them yet. It holds no lock while it
// calls them; mu is taken only to copy the raw ports.
func (r *routeApplier) apply(ctx context.Context, d *Daemon) {
	t := r.table.Load()
	switch {
	case t == r.applied:
	case r.applied != nil && t.SameRoutes(r.applied):
		r.applied = t // only the backends changed
	default:
		if err := d.deps.Router.Apply(ctx, t.Routes()); err != nil {
			d.cfg.Logf("nibrunnerd: apply the routes: %v", err)
		} else {
			r.applied = t
		}
	}
	if d.deps.Ports == nil {
		return
	}
	d.mu.Lock()
	raw := r.raw
	d.mu.Unlock()
	if r.lastPorts != nil && reflect.DeepEqual(raw, r.lastPorts) {
		return
	}
	if err := d.deps.Ports.ApplyPorts(ctx, raw); err != nil {
		d.cfg.Logf("nibrunnerd: apply the raw ports: %v", err)
		return
	}
	r.lastPorts = append([]route.Port{}, raw...)
}
