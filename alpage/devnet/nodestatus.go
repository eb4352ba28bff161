package devnet

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// NodeStatus serves one replica's GET /api/v2/status: a CBOR map under the
// self-describe tag carrying impl_version (what the node actually runs, which
// is how reconcile learns a node's version) and replica_health_status. Mount
// it behind TLS: replicas serve HTTPS with a self-signed certificate.
type NodeStatus struct {
	// Version returns the version the node reports; a func so a node can be
	// "upgraded" while serving.
	Version func() string
	// Health returns the replica_health_status it reports; nil: healthy.
	Health func() string
}

type statusReply struct {
	ImplVersion         string `cbor:"impl_version"`
	ImplHash            string `cbor:"impl_hash"`
	ReplicaHealthStatus string `cbor:"replica_health_status"`
	CertifiedHeight     uint64 `cbor:"certified_height"`
}

// ServeHTTP implements http.Handler.
func (n *NodeStatus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v2/status" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := cbor.Marshal(cbor.Tag{Number: 55799, Content: statusReply{
		ImplVersion:         n.Version(),
		ImplHash:            "",
		ReplicaHealthStatus: n.health(),
		CertifiedHeight:     1,
	}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	_, _ = w.Write(body)
}

func (n *NodeStatus) health() string {
	if n.Health == nil {
		return "healthy"
	}
	return n.Health()
}

// SelfSignedCert makes a TLS certificate for 127.0.0.1, ::1 and localhost,
// like the self-signed certificate each replica serves, and returns it with
// its PEM so a client can pin it if it wants to. Its key is Ed25519, as a
// replica's is (it signs the TLS 1.3 handshake with Ed25519;
// docs/decisions.md), which also costs both ends of a status read less
// than ECDSA.
func SelfSignedCert() (tls.Certificate, []byte, error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("generate node TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "alp devnet node"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("self-sign node certificate: %w", err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
