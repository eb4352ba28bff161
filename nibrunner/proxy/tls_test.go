package proxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/route"
)

// selfSigned writes a certificate for names to two PEM files and returns
// them with a pool that trusts it.
func selfSigned(t *testing.T, names ...string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// tlsClient dials addr whatever the URL says, with SNI serverName, and
// negotiates h2 when the server offers it.
func tlsClient(addr, serverName string, pool *x509.CertPool) *http.Client {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, ServerName: serverName},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr}
}

func TestOverTLSTheProxySpeaksH2AndRefusesAHostItsConnectionWasNotFor(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, "shop.example.com", "blog.example.com")
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{CertFile: certFile, KeyFile: keyFile})
	apply(t, p,
		routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up),
		routeTo("blog.example.com", "blog", backend(t, "blog"), route.Up),
	)
	c := tlsClient(addr, "shop.example.com", pool)
	defer c.CloseIdleConnections()
	base := "https://shop.example.com"

	got := get(t, c, base, "shop.example.com")
	must(t, got, 200, "shop answers shop.example.com\n")
	if got.proto != "HTTP/2.0" {
		t.Fatalf("negotiated %s, want HTTP/2.0", got.proto)
	}
	// The certificate covers blog too, so an h2 client may reuse this
	// connection for it; 421 tells it to open one of its own.
	must(t, get(t, c, base, "blog.example.com"), 421, "This connection was opened for another hostname; open a new one for this host.\n")

	// Over HTTP/1.1 the same rule holds.
	c1 := tlsClient(addr, "shop.example.com", pool)
	c1.Transport.(*http.Transport).ForceAttemptHTTP2 = false
	c1.Transport.(*http.Transport).TLSClientConfig.NextProtos = []string{"http/1.1"}
	got = get(t, c1, base, "blog.example.com")
	must(t, got, 421, "This connection was opened for another hostname; open a new one for this host.\n")
	if got.proto != "HTTP/1.1" {
		t.Fatalf("negotiated %s, want HTTP/1.1", got.proto)
	}
}

func TestWithoutTLSAClientMaySpeakH2WithPriorKnowledgeWhenH2CIsOn(t *testing.T) {
	p := newProxy(t, &fakeWaker{})
	addr := serve(t, p, ListenConfig{H2C: true})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	protos := new(http.Protocols)
	protos.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: protos}}
	defer c.CloseIdleConnections()
	got := get(t, c, "http://"+addr, "shop.example.com")
	must(t, got, 200, "shop answers shop.example.com\n")
	if got.proto != "HTTP/2.0" {
		t.Fatalf("negotiated %s, want HTTP/2.0", got.proto)
	}
}

func TestACertificateWithoutItsKeyIsRefused(t *testing.T) {
	certFile, _, _ := selfSigned(t, "shop.example.com")
	if _, err := newProxy(t, nil).Listen(context.Background(), ListenConfig{Address: "127.0.0.1:0", CertFile: certFile}); err == nil {
		t.Fatal("Listen accepted a certificate without a key")
	}
}

func TestAnH2RequestIsLoggedLikeAnHTTP1One(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t, "shop.example.com")
	var buf testenv.SyncBuffer
	p := New(Options{Logf: t.Logf, AccessLog: &buf})
	addr := serve(t, p, ListenConfig{CertFile: certFile, KeyFile: keyFile})
	apply(t, p, routeTo("shop.example.com", "shop", backend(t, "shop"), route.Up))
	c := tlsClient(addr, "shop.example.com", pool)
	defer c.CloseIdleConnections()
	must(t, get(t, c, "https://shop.example.com", "shop.example.com"), 200, "shop answers shop.example.com\n")
	waitFor(t, "the request is logged", func() bool { return strings.Contains(buf.String(), "\n") })
	var line map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(buf.String())), &line); err != nil {
		t.Fatal(err)
	}
	if line["proto"] != "HTTP/2.0" || line["client"] != "127.0.0.1" || line["app"] != "shop" || line["status"] != 200.0 || line["id"] == "" {
		t.Fatalf("the h2 request was logged as %v", line)
	}
}
