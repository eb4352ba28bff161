package daemon

import (
	"context"
	"net/netip"
	"reflect"
	"sort"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/slot"
	"alpnib.dev/nibrunner/vmm"
)

// routeAndNetwork publishes the routes and hands the network its whole
// ruleset when the slots changed. The tables are made under the lock; the
// network and the router are called outside it.
func (d *Daemon) routeAndNetwork(ctx context.Context) {
	d.mu.Lock()
	nets := d.apps.netSlots(d.acc.doc)
	stale := !d.routes.netReady || !reflect.DeepEqual(nets, d.routes.lastNet)
	d.publishLocked()
	d.mu.Unlock()
	if stale {
		cctx, cancel := context.WithTimeout(ctx, opTimeout)
		err := d.deps.Network.Apply(cctx, nets)
		cancel()
		d.mu.Lock()
		if err != nil {
			d.routes.netErr = err.Error()
			d.cfg.Logf("nibrunnerd: apply the network rules: %v", err)
		} else {
			d.routes.netReady, d.routes.netErr, d.routes.lastNet = true, "", nets
		}
		d.mu.Unlock()
	}
	d.routes.changed()
}

// netSlots is the network's table: every app doc lists with a slot, its
// ports forwarded while its guest is up (mu held).
func (ps *apps) netSlots(doc *desired.HostDesiredState) []network.App {
	var nets []network.App
	if doc == nil {
		return nets
	}
	for i := range doc.Instances {
		in := &doc.Instances[i]
		a := ps.byID[string(in.AppId)]
		if a == nil || !a.hasSlot {
			continue
		}
		var guestPorts []int
		for _, p := range ports(in, a.slot) {
			guestPorts = append(guestPorts, p.GuestPort)
		}
		nets = append(nets, network.App{AppID: a.id, Slot: a.slot, HTTPPort: int(in.Config.HttpPort), Ports: guestPorts, Running: a.up()})
	}
	return nets
}

// publishLocked makes the table the request path reads from what the
// daemon knows now, and swaps it in if it differs (mu held). It is the one
// place routes are made (buildRoutes); the route applier hands them to the
// router.
func (d *Daemon) publishLocked() {
	facts, backends := d.apps.routeFacts()
	routes, raw := buildRoutes(d.acc.doc, facts, d.routes.table.Load().Routes(), d.cfg.UserNetwork)
	d.routes.raw = raw
	t := route.NewTable(routes, backends)
	if !t.Same(d.routes.table.Load()) {
		d.routes.table.Store(t)
	}
}

// routeFacts is what the route builder reads of every app the daemon
// holds, and where each guest a prober watches answers (mu held).
func (ps *apps) routeFacts() (facts map[string]routeFacts, backends map[string]string) {
	facts, backends = make(map[string]routeFacts, len(ps.byID)), map[string]string{}
	for app, a := range ps.byID {
		if a.prober != nil && a.prober.endpoint != "" {
			backends[app] = a.prober.endpoint
		}
		f := routeFacts{Slot: a.slot, HasSlot: a.hasSlot, Up: a.up(), Answering: answering(a), Booted: a.rec != nil && a.rec.Booted}
		if f.Up {
			f.Addr = a.vm.Endpoint
		}
		facts[app] = f
	}
	return facts, backends
}

// routeFacts is what the route builder needs to know of one app the daemon
// holds.
type routeFacts struct {
	Slot    int
	HasSlot bool
	// Up: its guest runs; Answering: and has passed its health check;
	// Booted: this deployment was booted at least once.
	Up, Answering, Booted bool
	Addr                  string // where its guest answers, while up
}

// buildRoutes is the routing table and the raw ports of doc, given what
// the daemon holds of each app (by app id) and the routes it published
// last. It is pure.
//
// Every hostname the document lists has a route, whether or not its app
// was ever given a slot: an app stopped from its first document answers
// 503 "This app is not running.", never 404, and a request to one whose
// first boot is still to come waits for it. An app the document no longer
// lists but the daemon still holds is being deleted: the hostnames it had
// (in last) keep answering 503 until it is forgotten, unless an app of the
// document names them now. Raw ports are published only for apps with a
// slot, and not on a user network (QEMU forwards them on loopback itself).
func buildRoutes(doc *desired.HostDesiredState, apps map[string]routeFacts, last []route.Route, userNetwork bool) ([]route.Route, []route.Port) {
	var routes []route.Route
	var raw []route.Port
	listed := map[string]bool{}
	named := map[string]bool{}
	if doc != nil {
		for i := range doc.Instances {
			in := &doc.Instances[i]
			id := string(in.AppId)
			listed[id] = true
			f := apps[id]
			state := hostnameState(in.DesiredState, f)
			hostPort := 0
			if f.HasSlot {
				hostPort = slot.HostPort(f.Slot)
			}
			var addr string
			if f.HasSlot && f.Up {
				addr = f.Addr
			}
			for _, h := range in.Hostnames {
				named[string(h.Hostname)] = true
				routes = append(routes, route.Route{Hostname: string(h.Hostname), AppID: id, HostPort: hostPort, Addr: addr, State: state})
			}
			if f.HasSlot && !userNetwork {
				// The relay reaches a raw port at the guest's tap address,
				// which holds while it sleeps.
				guest := slot.Network(f.Slot).GuestIPv4
				for i, p := range in.Config.Ports {
					raw = append(raw, route.Port{AppID: id, Index: i + 1, HostPort: hostPort + 1 + i,
						Addr: netip.AddrPortFrom(guest, uint16(p.GuestPort)).String(), State: state})
				}
			}
		}
	}
	for _, rt := range last {
		if _, held := apps[rt.AppID]; !held || listed[rt.AppID] || named[rt.Hostname] {
			continue
		}
		named[rt.Hostname] = true
		routes = append(routes, route.Route{Hostname: rt.Hostname, AppID: rt.AppID, HostPort: rt.HostPort, State: route.Down})
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Hostname < routes[j].Hostname })
	return routes, raw
}

// hostnameState is what a listed app's hostnames do: proxy to a guest
// whose health check passed; answer 503 "This app is not running." for an
// app asked stopped; and otherwise hand the request to the activator,
// whose wake brings the app up or waits for it (a first boot still to
// come or under way, a guest booting, an app asleep), or answers why it
// cannot (its start held back, its restart's backoff, its budget spent,
// a host that cannot carry it).
func hostnameState(want desired.DesiredInstanceState, f routeFacts) route.State {
	switch {
	case f.Up && f.Answering:
		return route.Up
	case want == desired.StateStopped:
		return route.Down
	}
	return route.Sleeping
}

// answering tells whether a's guest has passed its health check: its
// prober says running, or unhealthy (it answered once and may still).
func answering(a *app) bool {
	if a.prober == nil {
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
