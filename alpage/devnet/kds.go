package devnet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"
)

// AMD VCEK certificate extensions (AMD's VCEK certificate and KDS interface
// specification, 57230).
var (
	OIDHwID        = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 4}
	OIDProductName = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 2}
	oidBlSPL       = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 3, 1}
	oidTeeSPL      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 3, 2}
	oidSnpSPL      = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 3, 3}
	oidUcodeSPL    = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 3704, 1, 3, 8}
)

// KDSProducts are the product lines KDS serves VCEKs for.
var KDSProducts = []string{"Milan", "Genoa", "Turin"}

// KDS stands in for AMD's key distribution service
// (https://kdsintf.amd.com):
//
//	GET /vcek/v1/<Milan|Genoa|Turin>/<chip hex>?blSPL=..&teeSPL=..&snpSPL=..&ucodeSPL=..
//	    → the chip's VCEK, a DER X.509 certificate whose extension
//	      1.3.6.1.4.1.3704.1.4 holds the 64-byte chip id (an OCTET STRING)
//	      and 1.3.6.1.4.1.3704.1.2 the product name (an IA5String,
//	      e.g. "Milan-B0"), signed by a test CA made at start;
//	    → 404 for a chip it does not know or that belongs to another product;
//	    → 429 for a chip listed as rate-limited (an inconclusive answer).
//	GET /vcek/v1/<product>/cert_chain → the CA certificate, PEM.
type KDS struct {
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	caDER  []byte

	mu          sync.Mutex
	chips       map[string]string // chip hex (lower case) → product name
	rateLimited map[string]bool
	issued      map[string][]byte
}

// NewKDS makes a KDS with a fresh test CA. chips maps a chip id in hex to
// its product name ("Milan-B0"); rateLimited lists chip ids answered 429.
func NewKDS(chips map[string]string, rateLimited []string) (*KDS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate KDS CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "ARK-devnet (test CA, not AMD)", Organization: []string{"alp devnet"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(25 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("self-sign KDS CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse KDS CA: %w", err)
	}
	k := &KDS{caKey: key, caCert: ca, caDER: der, chips: map[string]string{}, rateLimited: map[string]bool{}, issued: map[string][]byte{}}
	for c, p := range chips {
		k.chips[strings.ToLower(c)] = p
	}
	for _, c := range rateLimited {
		k.rateLimited[strings.ToLower(c)] = true
	}
	return k, nil
}

// CACertificate is the test CA every VCEK is signed by.
func (k *KDS) CACertificate() *x509.Certificate { return k.caCert }

// CAPEM is the CA certificate in PEM.
func (k *KDS) CAPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: k.caDER})
}

// ServeHTTP implements http.Handler.
func (k *KDS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/vcek/v1/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/vcek/v1/") || len(parts) != 2 || !contains(KDSProducts, parts[0]) {
		http.NotFound(w, r)
		return
	}
	product, chip := parts[0], strings.ToLower(parts[1])
	if chip == "cert_chain" {
		w.Header().Set("Content-Type", "application/x-pem-file")
		_, _ = w.Write(k.CAPEM())
		return
	}
	raw, err := hex.DecodeString(chip)
	if err != nil || len(raw) != 64 {
		http.Error(w, "hwid must be 64 bytes in hex", http.StatusBadRequest)
		return
	}
	der, status := k.vcek(product, chip, raw)
	if status != http.StatusOK {
		http.Error(w, http.StatusText(status), status)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(der)
}

func (k *KDS) vcek(product, chip string, raw []byte) ([]byte, int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.rateLimited[chip] {
		return nil, http.StatusTooManyRequests
	}
	name, ok := k.chips[chip]
	if !ok || !strings.HasPrefix(name, product) {
		return nil, http.StatusNotFound
	}
	if der, ok := k.issued[chip]; ok {
		return der, http.StatusOK
	}
	der, err := k.issue(name, raw)
	if err != nil {
		return nil, http.StatusInternalServerError
	}
	k.issued[chip] = der
	return der, http.StatusOK
}

func (k *KDS) issue(product string, chipID []byte) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		return nil, err
	}
	hwid, err := asn1.Marshal(chipID)
	if err != nil {
		return nil, err
	}
	name, err := asn1.MarshalWithParams(product, "ia5")
	if err != nil {
		return nil, err
	}
	zero, _ := asn1.Marshal(0)
	sum := sha256.Sum256(chipID)
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(sum[:16]),
		Subject:      pkix.Name{CommonName: "SEV-VCEK", Organization: []string{"alp devnet"}},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 365 * 24 * time.Hour),
		ExtraExtensions: []pkix.Extension{
			{Id: OIDProductName, Value: name},
			{Id: oidBlSPL, Value: zero},
			{Id: oidTeeSPL, Value: zero},
			{Id: oidSnpSPL, Value: zero},
			{Id: oidUcodeSPL, Value: zero},
			{Id: OIDHwID, Value: hwid},
		},
	}
	return x509.CreateCertificate(rand.Reader, tmpl, k.caCert, &key.PublicKey, k.caKey)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
