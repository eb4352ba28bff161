// Package registrytest runs Debian's docker-registry (the CNCF
// distribution registry) on loopback for a test, with TLS from a test CA
// or basic auth, and pushes images to it: the real registry the image
// tests and the daemon's image tests pull from.
package registrytest

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"alpnib.dev/internal/testenv"
)

// Registry is Debian's docker-registry (the CNCF distribution registry)
// serving on loopback for one test.
type Registry struct {
	Addr    string // 127.0.0.1:port
	Storage string // its filesystem storage root
	CAFile  string // PEM of the test CA when it serves TLS
	User    string // basic-auth login when it has an htpasswd file
	Pass    string
	pushTr  http.RoundTripper

	mu  sync.Mutex
	log bytes.Buffer
}

// Options say how the registry serves.
type Options struct {
	TLS  bool // serve TLS with a certificate from a test CA
	Auth bool // require basic auth (htpasswd, bcrypt)
}

// Start runs a registry on a free loopback port until the test ends.
func Start(t testing.TB, o Options) *Registry {
	t.Helper()
	bin := testenv.RequireCommand(t, "docker-registry")
	dir := t.TempDir()
	r := &Registry{Storage: filepath.Join(dir, "storage")}
	tlsCfg := &tls.Config{}
	var extra string
	if o.TLS {
		ca, cert, key := testCertificates(t)
		r.CAFile = filepath.Join(dir, "ca.pem")
		write(t, r.CAFile, ca, 0o644)
		write(t, filepath.Join(dir, "cert.pem"), cert, 0o644)
		write(t, filepath.Join(dir, "key.pem"), key, 0o600)
		extra += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tlsCfg.RootCAs = pool
	}
	var auth string
	if o.Auth {
		r.User, r.Pass = "pusher", "s3cret-pass"
		// distribution 2.8's htpasswd checks bcrypt hashes only
		// (registry/auth/htpasswd/htpasswd.go, bcrypt.CompareHashAndPassword).
		h, err := bcrypt.GenerateFromPassword([]byte(r.Pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "htpasswd"), []byte(r.User+":"+string(h)+"\n"), 0o600)
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: test\n    path: %s\n", filepath.Join(dir, "htpasswd"))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	r.pushTr = tr
	for attempt := 0; ; attempt++ {
		r.Addr = freePort(t)
		cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n  secret: test-secret\n%s%s", r.Storage, r.Addr, extra, auth)
		write(t, filepath.Join(dir, "config.yml"), []byte(cfg), 0o644)
		err := r.run(t, bin, filepath.Join(dir, "config.yml"))
		if err == nil {
			return r
		}
		if attempt == 2 {
			t.Fatalf("docker-registry did not start: %v\n%s", err, r.Log())
		}
	}
}

// run starts the registry and waits for its "listening on" line, which it
// logs after binding the address (distribution registry/registry.go).
func (r *Registry) run(t testing.TB, bin, cfg string) error {
	cmd := exec.Command(bin, "serve", cfg)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := make(chan struct{})
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			r.mu.Lock()
			r.log.WriteString(line + "\n")
			r.mu.Unlock()
			if strings.Contains(line, "listening on "+r.Addr) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	go func() { exited <- cmd.Wait(); pw.Close() }()
	select {
	case <-ready:
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return nil
	case err := <-exited:
		return fmt.Errorf("exited: %v", err)
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("no \"listening on\" line within 60 s")
	}
}

// Log is what the registry has logged so far (its access log included).
func (r *Registry) Log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// BlobGets counts the registry's access-log lines for a GET of the blob.
func (r *Registry) BlobGets(repo string, digest v1.Hash) int {
	re := regexp.MustCompile(`"GET /v2/` + regexp.QuoteMeta(repo) + `/blobs/` + regexp.QuoteMeta(digest.String()) + ` HTTP/[0-9.]+" 200 `)
	return len(re.FindAllString(r.Log(), -1))
}

// Push stores img under repo:tag and returns its reference by digest.
func (r *Registry) Push(t testing.TB, repo string, img v1.Image) string {
	t.Helper()
	return r.put(t, repo, img.Digest, func(ref name.Reference, o ...remote.Option) error { return remote.Write(ref, img, o...) })
}

// PushIndex stores idx under repo:tag and returns its reference by digest.
func (r *Registry) PushIndex(t testing.TB, repo string, idx v1.ImageIndex) string {
	t.Helper()
	return r.put(t, repo, idx.Digest, func(ref name.Reference, o ...remote.Option) error { return remote.WriteIndex(ref, idx, o...) })
}

// put writes an image or an index (blobs and all) under repo:test and
// returns its reference by digest.
func (r *Registry) put(t testing.TB, repo string, digest func() (v1.Hash, error), write func(name.Reference, ...remote.Option) error) string {
	t.Helper()
	ref, err := name.NewTag(r.Addr+"/"+repo+":test", r.NameOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := write(ref, r.RemoteOptions()...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.Addr + "/" + repo + "@" + d.String()
}

// NameOptions are the options a name of this registry is parsed with.
func (r *Registry) NameOptions() []name.Option {
	if r.CAFile == "" {
		return []name.Option{name.Insecure}
	}
	return nil
}

// RemoteOptions are a client's options to push to this registry.
func (r *Registry) RemoteOptions() []remote.Option {
	opts := []remote.Option{remote.WithTransport(r.pushTr)}
	if r.User != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Pass}))
	}
	return opts
}

func write(t testing.TB, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func freePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testCertificates makes a CA and a certificate for 127.0.0.1 it signed.
func testCertificates(t testing.TB) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nibrunner test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
