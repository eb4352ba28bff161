package daemon

import (
	"context"
	"reflect"
	"sort"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// routeAndNetwork hands the router and the network their whole tables,
// only when they changed.
func (d *Daemon) routeAndNetwork(ctx context.Context, vms map[string]vmm.Status) {
	var nets []NetSlot
	var routes []route.Route
	if d.doc != nil {
		for i := range d.doc.Instances {
			in := &d.doc.Instances[i]
			app := string(in.AppId)
			a := d.apps[app]
			if a == nil || !a.hasSlot {
				continue
			}
			n := a.slot
			st, up := vms[app]
			up = up && st.State == vmm.Running
			nets = append(nets, NetSlot{AppID: app, Slot: n, Network: slot.Network(n), HTTPPort: int(in.Config.HttpPort), Ports: ports(in, n), Forward: up})
			state := route.Down
			rec := a.rec
			var addr string
			if up {
				addr = st.Endpoint
			}
			switch {
			case up && d.answering(app):
				state = route.Up
			case up && in.DesiredState != desired.StateStopped:
				// Booting: the activator waits on Wake, which joins this
				// boot's prober, rather than proxying to a guest that does
				// not listen yet (a 502).
				state = route.Sleeping
			case in.DesiredState == desired.StateOnRequest && rec != nil && rec.Booted:
				state = route.Sleeping
			}
			for _, h := range in.Hostnames {
				routes = append(routes, route.Route{Hostname: string(h.Hostname), AppID: app, HostPort: slot.HostPort(n), Addr: addr, State: state})
			}
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Hostname < routes[j].Hostname })
	if !d.netReady || !reflect.DeepEqual(nets, d.lastNet) {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		err := d.deps.Network.Apply(cctx, nets)
		cancel()
		if err != nil {
			d.netErr = err.Error()
			d.cfg.Logf("nibrunnerd: apply the network rules: %v", err)
		} else {
			d.netReady, d.netErr, d.lastNet = true, "", nets
		}
	}
	if !reflect.DeepEqual(routes, d.lastRoute) {
		if err := d.deps.Router.Apply(ctx, routes); err != nil {
			d.cfg.Logf("nibrunnerd: apply the routes: %v", err)
		} else {
			d.lastRoute = routes
		}
	}
}

// answering tells whether app's guest has passed its health check: its
// prober says running, or unhealthy (it answered once and may still).
func (d *Daemon) answering(app string) bool {
	a := d.apps[app]
	if a == nil || a.prober == nil {
		return false
	}
	s := a.prober.record().State
	return s == health.Running || s == health.Unhealthy
}

func ports(in *desired.DesiredInstance, n int) []vmm.Port {
	out := make([]vmm.Port, 0, len(in.Config.Ports))
	for i, p := range in.Config.Ports {
		out = append(out, vmm.Port{Name: string(p.Name), GuestPort: int(p.GuestPort), HostPort: slot.HostPort(n) + 1 + i})
	}
	return out
}
