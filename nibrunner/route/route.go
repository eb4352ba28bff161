// Package route is the routing table the daemon publishes and the request
// path reads: which app answers for a hostname, where it answers now, and
// whether it is up, asleep or down. It is a leaf package (nothing of the
// daemon's), so the proxies that serve requests depend on the table's
// shape, not on the converge loop that fills it.
package route

import (
	"context"
	"errors"
)

// ErrNotRunning is what a wake answers for an app the document asks
// stopped, or does not list: its hostnames answer 503 "This app is not
// running.".
var ErrNotRunning = errors.New("this app is not running")

// State is what a proxy does with a hostname.
type State string

// The route states.
const (
	Up       State = "up"       // proxy to Addr (or HostPort)
	Sleeping State = "sleeping" // the activator wakes (or waits for) the app
	Down     State = "down"     // 503 "This app is not running."
)

// Route sends one hostname to one app. A route is up only once the app's
// health check has passed; while its guest boots the route says sleeping,
// so a request waits on a wake (which shares the boot's health check)
// instead of meeting a guest that does not listen yet.
type Route struct {
	Hostname string
	AppID    string
	HostPort int
	// Addr is host:port where the app answers now: the VMM's endpoint for
	// its guest (the guest's IP for a microVM on a tap, a loopback port
	// for QEMU's user network or the fake VMM). Empty when no guest runs
	// or the VMM names none: the proxy then dials its backend host at
	// HostPort.
	Addr  string
	State State
}

// Router holds a proxy's routing table; Apply replaces it whole.
type Router interface {
	Apply(ctx context.Context, routes []Route) error
}
