package proxy

// The caps and timeouts that end a client's connection, by the name
// /metrics counts their trips under (nibrunner_proxy_limit_trips_total).
const (
	// limitHeaderTimeout: a head not read whole within
	// ListenConfig.ReadHeaderTimeout.
	limitHeaderTimeout = "header_timeout"
	// limitHeaderSize: a head past 64 KiB or 256 fields (431).
	limitHeaderSize = "header_size"
	// limitBodyTimeout: a request body that did not go on within
	// ListenConfig.BodyTimeout.
	limitBodyTimeout = "body_timeout"
	// limitSendTimeout: a client that took nothing of its answer within
	// ListenConfig.SendTimeout.
	limitSendTimeout = "send_timeout"
	// limitConnections: a connection, or an HTTP/2 stream, past
	// ListenConfig.MaxConnections.
	limitConnections = "connections"
	// limitClientConnections: a connection, or an HTTP/2 stream, past
	// ListenConfig.MaxConnectionsPerClient from one address.
	limitClientConnections = "client_connections"
	// limitAppConnections: a request that found its app's
	// Options.MaxBackendConnsPerApp connections in use for DialTimeout.
	limitAppConnections = "app_connections"
)

// tripped tells the recorder a limit tripped.
func (p *Proxy) tripped(limit string) {
	if p.opts.Recorder != nil {
		p.opts.Recorder.ProxyLimit(limit)
	}
}
