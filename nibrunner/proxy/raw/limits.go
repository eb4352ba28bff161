package raw

// The caps and timeouts of the relay, by the name /metrics counts their
// trips under (nibrunner_raw_limit_trips_total).
const (
	// limitTCPIdle: a connection nothing crossed for TCPIdleTimeout.
	limitTCPIdle = "tcp_idle_timeout"
	// limitTCPConnections: a connection past MaxTCPConnections.
	limitTCPConnections = "tcp_connections"
	// limitUDPPortBudget: a datagram dropped because its port's flows
	// queue PortQueueBytes already.
	limitUDPPortBudget = "udp_port_budget"
)

// limit tells the recorder of n trips.
func (r *Relay) limit(name string, n int) {
	if rec := r.opts.Recorder; rec != nil {
		rec.RawLimit(name, n)
	}
}
