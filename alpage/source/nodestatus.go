package source

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"
)

// NodeStatusCAEnv names a PEM file of certificates a node's status endpoint
// must chain to (alp devnet writes one). Unset, the certificate is not
// checked: every replica serves its own self-signed certificate, and what
// alp reads there (impl_version) is a report, not a trust decision.
const NodeStatusCAEnv = "ALP_NODE_STATUS_CA"

// DefaultNodePort is the replica's HTTPS port when the registry record
// names none.
const DefaultNodePort = 8080

// NodeStatus reads a replica's own GET /api/v2/status (CBOR), which says
// which GuestOS version it actually runs. Replicas are reached over IPv6.
type NodeStatus struct {
	http    *http.Client
	timeout time.Duration
	checked bool
	// memo, when set, keeps each reply (Remembering).
	memo *statusMemo
}

// ChecksCertificates reports whether the nodes' TLS certificates are
// verified against a CA; without one, what a node says is labelled.
func (n *NodeStatus) ChecksCertificates() bool { return n.checked }

// DefaultConnectTimeout bounds the TCP connect and the TLS handshake to a
// node: an unreachable node falls back to the dashboard this soon.
const DefaultConnectTimeout = 2 * time.Second

// NewNodeStatus returns a node status client. caFile, when not empty, is a
// PEM bundle the nodes' certificates must chain to; empty skips the check
// (see NodeStatusCAEnv).
func NewNodeStatus(caFile string) (*NodeStatus, error) {
	return NewNodeStatusTimeout(caFile, DefaultConnectTimeout)
}

// NewNodeStatusTimeout is NewNodeStatus with connect bounding the TCP
// connect and the TLS handshake to each node. The one TLS config is shared
// by every read, and no idle connection is kept: each node is asked once.
func NewNodeStatusTimeout(caFile string, connect time.Duration) (*NodeStatus, error) {
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	// X25519 first, so the ClientHello carries one key share: Go's
	// default also sends an X25519MLKEM768 share, whose ML-KEM key
	// generation and decapsulation were a third of the handshake's CPU
	// for every node, and which a replica never picks (its TLS stack
	// offers X25519, P-256 and P-384; docs/decisions.md). A status read
	// carries nothing secret: what matters is who answers, which the
	// certificate says, not the key exchange.
	cfg := &tls.Config{MinVersion: tls.VersionTLS12,
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384}}
	if caFile == "" {
		cfg.InsecureSkipVerify = true //nolint:gosec // self-signed per replica; see NodeStatusCAEnv
	} else {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("node status CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("node status CA %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	tr := &http.Transport{TLSClientConfig: cfg, Proxy: nil, DisableKeepAlives: true,
		TLSHandshakeTimeout: connect,
		DialContext:         (&net.Dialer{Timeout: connect}).DialContext}
	return &NodeStatus{http: &http.Client{Transport: tr}, timeout: 10 * time.Second, checked: caFile != ""}, nil
}

// NodeStatusURL is the status endpoint of the node at ip:port.
func NodeStatusURL(ip string, port uint32) string {
	if port == 0 {
		port = DefaultNodePort
	}
	return "https://" + net.JoinHostPort(ip, strconv.FormatUint(uint64(port), 10)) + "/api/v2/status"
}

// Version reads impl_version from the node at ip:port.
func (n *NodeStatus) Version(ctx context.Context, ip string, port uint32) (string, error) {
	body, u, err := n.status(ctx, ip, port)
	if err != nil {
		return "", err
	}
	v, err := ImplVersion(body)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u, err)
	}
	return v, nil
}

// ImplVersion reads impl_version from a status reply: a CBOR map, usually
// under the self-describe tag 55799.
func ImplVersion(body []byte) (string, error) { return statusField(body, "impl_version") }

// NodeVersion reads the GuestOS version the dashboard reports for a node
// (GET /api/v3/nodes/<node>). It may lag what the node runs; label it
// "via dashboard". found is false on a 404.
func (d *Dashboard) NodeVersion(ctx context.Context, node string) (version string, found bool, err error) {
	n, found, err := d.Node(ctx, node)
	return n.GuestOSVersion, found && n.GuestOSVersion != "", err
}

// DashboardNode is what the dashboard says of a node: the GuestOS version
// it reports, its status ("UP", "DOWN", "DEGRADED", "UNASSIGNED") and the
// alert behind it.
type DashboardNode struct {
	NodeID string `json:"node_id"`
	// Alertname is the alert behind a DEGRADED or DOWN status ("" when
	// none); dre counts IC_PrometheusTargetMissing as healthy (Health).
	Alertname      string `json:"alertname"`
	GuestOSVersion string `json:"guestos_version"`
	Status         string `json:"status"`
}

// Nodes reads GET /api/v3/nodes, every node the dashboard knows in one
// reply ({"nodes": [...]}), keyed by node id. A node listed twice keeps
// its first entry; one without an id is left out.
func (d *Dashboard) Nodes(ctx context.Context) (map[string]DashboardNode, error) {
	var list struct {
		Nodes []DashboardNode `json:"nodes"`
	}
	if err := d.c.getJSON(ctx, "/api/v3/nodes", &list); err != nil {
		return nil, fmt.Errorf("ICP dashboard: %w", err)
	}
	out := make(map[string]DashboardNode, len(list.Nodes))
	for _, n := range list.Nodes {
		if _, seen := out[n.NodeID]; n.NodeID != "" && !seen {
			out[n.NodeID] = n
		}
	}
	return out, nil
}

// Node reads GET /api/v3/nodes/<node>; found is false on a 404.
func (d *Dashboard) Node(ctx context.Context, node string) (DashboardNode, bool, error) {
	var n DashboardNode
	if err := d.c.getJSON(ctx, "/api/v3/nodes/"+url.PathEscape(node), &n); err != nil {
		if errors.Is(err, ErrNotFound) {
			return DashboardNode{}, false, nil
		}
		return DashboardNode{}, false, fmt.Errorf("ICP dashboard: %w", err)
	}
	return n, true, nil
}
