package daemon

import (
	"context"

	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/route"
)

// NoNetwork applies nothing: for the fake VMM, whose guests listen on
// loopback, and for hosts where the network package is not wired yet.
type NoNetwork struct{}

// Apply implements Network.
func (NoNetwork) Apply(context.Context, []NetSlot) error { return nil }

// HostNetwork adapts network.Host (a tap per slot and the nibrun table)
// to the Network port.
type HostNetwork struct{ Host network.Host }

// Apply implements Network.
func (h HostNetwork) Apply(ctx context.Context, slots []NetSlot) error {
	apps := make([]network.App, len(slots))
	for i, s := range slots {
		ports := make([]int, len(s.Ports))
		for j, p := range s.Ports {
			ports[j] = p.GuestPort
		}
		apps[i] = network.App{Slot: s.Slot, AppID: s.AppID, Running: s.Forward, HTTPPort: s.HTTPPort, Ports: ports}
	}
	return h.Host.Apply(ctx, apps)
}

// NoRouter applies no routes, for a host without an HTTP proxy: the
// daemon still publishes its table (Backend reads it).
type NoRouter struct{}

// Apply implements Router.
func (NoRouter) Apply(context.Context, []route.Route) error { return nil }
