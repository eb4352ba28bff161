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
func (NoNetwork) Apply(context.Context, []network.App) error { return nil }

// NoRouter applies no routes, for a host without an HTTP proxy: the
// daemon still publishes its table (Backend reads it).
type NoRouter struct{}

// Apply implements Router.
func (NoRouter) Apply(context.Context, []route.Route) error { return nil }
