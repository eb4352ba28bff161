// Package route is the routing table the daemon publishes and the request
// path reads: which app answers for a hostname, where it answers now, and
// whether it is up, asleep or down. It is a leaf package (nothing of the
// daemon's), so the proxies that serve requests depend on the table's
// shape, not on the converge loop that fills it.
package route

import (
	"context"
	"errors"
	"sync/atomic"
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

// Table is one published routing table and where each app answers now. It
// is immutable once made: the daemon makes a new one on every change and
// swaps it in whole (Published), so a reader on the request path takes no
// lock and never sees half a change.
type Table struct {
	routes   []Route
	backends map[string]string
}

// NewTable makes a table of routes (kept in the order given) and backends
// (host:port where each app's guest answers, by app id). It keeps both as
// given: the caller must not change them afterwards.
func NewTable(routes []Route, backends map[string]string) *Table {
	return &Table{routes: routes, backends: backends}
}

// Routes returns a copy of the table's routes.
func (t *Table) Routes() []Route {
	if t == nil {
		return nil
	}
	return append([]Route(nil), t.routes...)
}

// Backend is host:port where app's guest answers now, or "" when none is
// up or the VMM names none.
func (t *Table) Backend(app string) string {
	if t == nil {
		return ""
	}
	return t.backends[app]
}

// SameRoutes reports whether t and u hold the same routes in the same
// order.
func (t *Table) SameRoutes(u *Table) bool {
	if t == nil || u == nil {
		return t == u
	}
	if len(t.routes) != len(u.routes) {
		return false
	}
	for i := range t.routes {
		if t.routes[i] != u.routes[i] {
			return false
		}
	}
	return true
}

// Same reports whether t and u hold the same routes and name the same
// backends.
func (t *Table) Same(u *Table) bool {
	if !t.SameRoutes(u) || len(t.backends) != len(u.backends) {
		return false
	}
	for app, addr := range t.backends {
		if other, ok := u.backends[app]; !ok || other != addr {
			return false
		}
	}
	return true
}

// Published is the current Table, swapped atomically. The zero value holds
// an empty table.
type Published struct{ p atomic.Pointer[Table] }

// Load returns the current table (never nil).
func (p *Published) Load() *Table {
	if t := p.p.Load(); t != nil {
		return t
	}
	return &Table{}
}

// Store publishes t.
func (p *Published) Store(t *Table) { p.p.Store(t) }

// Port is one raw port of an app: what the relay in front of the host
// ([proxy.raw]) listens on and where it carries what arrives. Raw ports
// carry tcp and udp alike, unread.
type Port struct {
	AppID string
	// Index is the port's place in the app's ports, from 1: the relay
	// listens on the slot's HTTP host port + Index.
	Index    int
	HostPort int
	// Addr is host:port where the guest answers this port: its address
	// on its tap, which does not change while it sleeps.
	Addr  string
	State State
}

// PortRouter holds the raw relay's table; ApplyPorts replaces it whole.
type PortRouter interface {
	ApplyPorts(ctx context.Context, ports []Port) error
}
