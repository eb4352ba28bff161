package raw

import (
	"net"
	"net/netip"
	"sync"
)

// The caps and timeouts of the relay, by the name /metrics counts their
// trips under (nibrunner_raw_limit_trips_total).
const (
	// limitTCPIdle: a connection nothing crossed for TCPIdleTimeout.
	limitTCPIdle = "tcp_idle_timeout"
	// limitTCPConnections: a connection past MaxTCPConnections.
	limitTCPConnections = "tcp_connections"
	// limitTCPClientConnections: a connection past
	// MaxTCPConnectionsPerClient from one address.
	limitTCPClientConnections = "tcp_client_connections"
	// limitTCPAppConnections: a connection past MaxTCPConnectionsPerApp
	// to one app.
	limitTCPAppConnections = "tcp_app_connections"
	// limitUDPPortBudget: a datagram dropped because its port's flows
	// queue PortQueueBytes already.
	limitUDPPortBudget = "udp_port_budget"
	// limitUDPFlows: a datagram dropped because it would begin a flow of
	// a port that has MaxFlows.
	limitUDPFlows = "udp_flows"
	// limitUDPClientFlows: a datagram dropped because it would begin a
	// flow of a port where its client's address has MaxFlowsPerClient.
	limitUDPClientFlows = "udp_client_flows"
)

// defaultMaxTCPConnectionsPerClient is the HTTP proxy's per-client
// default (nibrunner/proxy's defaultMaxConnectionsPerClient), so a client
// meets the same bound on either side of the host.
const defaultMaxTCPConnectionsPerClient = 256

// limit tells the recorder of n trips.
func (r *Relay) limit(name string, n int) {
	if rec := r.opts.Recorder; rec != nil {
		rec.RawLimit(name, n)
	}
}

// tcpCount is the TCP connections open, in all, by client address and
// by app, under one lock so that a connection is admitted against all
// three caps or none.
type tcpCount struct {
	mu       sync.Mutex
	open     int
	byClient map[netip.Addr]int
	byApp    map[string]int
}

// clientAddr is the address a connection's caps count it under: its
// peer's IP, an IPv4-mapped one as IPv4 (as the HTTP proxy counts it).
func clientAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// admitTCP counts one more connection from client to app against the
// caps: release gives its place back (call it once), or limit names the cap it
// is past. The host-wide cap is checked first, then the client's, then
// the app's, so a trip is counted under the widest cap that is full.
func (r *Relay) admitTCP(client netip.Addr, app string) (release func(), limit string) {
	t := &r.tcp
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.open >= r.opts.MaxTCPConnections:
		return nil, limitTCPConnections
	case t.byClient[client] >= r.opts.MaxTCPConnectionsPerClient:
		return nil, limitTCPClientConnections
	case t.byApp[app] >= r.opts.MaxTCPConnectionsPerApp:
		return nil, limitTCPAppConnections
	}
	if t.byClient == nil {
		t.byClient, t.byApp = map[netip.Addr]int{}, map[string]int{}
	}
	t.open++
	t.byClient[client]++
	t.byApp[app]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.open--
		if t.byClient[client]--; t.byClient[client] <= 0 {
			delete(t.byClient, client)
		}
		if t.byApp[app]--; t.byApp[app] <= 0 {
			delete(t.byApp, app)
		}
	}, ""
}

// openTCP is the TCP connections open: in all, from client, to app.
func (r *Relay) openTCP(client netip.Addr, app string) (all, fromClient, toApp int) {
	t := &r.tcp
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.open, t.byClient[client], t.byApp[app]
}
