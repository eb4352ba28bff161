package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Health is a node's health as dre reads it (HealthStatus in
// dfinity/dre rs/ic-management-types/src/lib.rs): healthy, degraded,
// down (dre's Dead) or unknown.
type Health string

// The healths, best first.
const (
	Healthy       Health = "healthy"
	Degraded      Health = "degraded"
	Down          Health = "down"
	HealthUnknown Health = "unknown"
)

// targetMissing is the dashboard alert under which dre counts a DEGRADED
// node healthy: only its metrics are not scraped.
const targetMissing = "IC_PrometheusTargetMissing"

// DashboardHealth is what the dashboard's alertname and status say of a
// node, read as dre reads them (HealthStatus::from_str_from_dashboard):
// UP and UNASSIGNED are healthy, DEGRADED is degraded unless the alert is
// only a missing Prometheus target, DOWN is down, anything else unknown.
func DashboardHealth(alertname, status string) Health {
	switch {
	case status == "UP" || status == "UNASSIGNED":
		return Healthy
	case status == "DEGRADED" && alertname == targetMissing:
		return Healthy
	case status == "DEGRADED":
		return Degraded
	case status == "DOWN":
		return Down
	}
	return HealthUnknown
}

// Health is what the dashboard says of the node's health.
func (n DashboardNode) Health() Health { return DashboardHealth(n.Alertname, n.Status) }

// ReplicaHealthy is the replica_health_status of a replica that serves
// every request (ReplicaHealthStatus in dfinity/ic
// rs/types/types/src/messages/http.rs); the other values (starting,
// waiting_for_certified_state, waiting_for_root_delegation,
// certified_state_behind) say it does not yet, or lags.
const ReplicaHealthy = "healthy"

// Health reads replica_health_status from the node at ip:port.
func (n *NodeStatus) Health(ctx context.Context, ip string, port uint32) (string, error) {
	body, u, err := n.status(ctx, ip, port)
	if err != nil {
		return "", err
	}
	s, err := statusField(body, "replica_health_status")
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	return s, nil
}

// status GETs the node's /api/v2/status body.
func (n *NodeStatus) status(ctx context.Context, ip string, port uint32) ([]byte, string, error) {
	if ip == "" {
		return nil, "", errors.New("the node record has no http address")
	}
	u := NodeStatusURL(ip, port)
	if body, ok := n.memo.get(u); ok {
		return body, u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, u, fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := n.http.Do(req)
	if err != nil {
		return nil, u, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, u, fmt.Errorf("GET %s: read body: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, u, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	n.memo.put(u, body)
	return body, u, nil
}

// statusMemo holds each node's status reply, by URL, for one command's
// run; a nil *statusMemo holds nothing.
type statusMemo struct {
	mu     sync.Mutex
	bodies map[string][]byte
}

func (m *statusMemo) get(u string) ([]byte, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.bodies[u]
	return b, ok
}

func (m *statusMemo) put(u string, body []byte) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bodies[u] = body
}

// Remembering is n keeping each node's status reply for as long as it is
// used: the version and the health of a node are then one reading, and a
// command that asks both (plan --generate) dials each node once. A failed
// read is not kept, so a node that did not answer is asked again.
func (n *NodeStatus) Remembering() *NodeStatus {
	c := *n
	c.memo = &statusMemo{bodies: map[string][]byte{}}
	return &c
}

// statusField reads a text field of a status reply: a CBOR map, usually
// under the self-describe tag 55799.
func statusField(body []byte, key string) (string, error) {
	var raw any
	if err := cbor.Unmarshal(body, &raw); err != nil {
		return "", fmt.Errorf("decode status: %w", err)
	}
	if t, ok := raw.(cbor.Tag); ok && t.Number == 55799 {
		raw = t.Content
	}
	var v any
	switch m := raw.(type) {
	case map[any]any:
		v = m[key]
	case map[string]any:
		v = m[key]
	default:
		return "", errors.New("status is not a CBOR map")
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", fmt.Errorf("status has no %s", key)
	}
	return s, nil
}
