package image

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
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
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/image/internal/tartest"
)

// registry is Debian's docker-registry (the CNCF distribution registry)
// serving on loopback for one test.
type registry struct {
	addr    string // 127.0.0.1:port
	storage string // its filesystem storage root
	caFile  string // PEM of the test CA when it serves TLS
	user    string // basic-auth login when it has an htpasswd file
	pass    string
	pushTr  http.RoundTripper

	mu  sync.Mutex
	log bytes.Buffer
}

type registryOpts struct {
	tls  bool // serve TLS with a certificate from a test CA
	auth bool // require basic auth (htpasswd, bcrypt)
}

func startRegistry(t *testing.T, o registryOpts) *registry {
	t.Helper()
	bin := testenv.RequireCommand(t, "docker-registry")
	dir := t.TempDir()
	r := &registry{storage: filepath.Join(dir, "storage")}
	tlsCfg := &tls.Config{}
	var extra string
	if o.tls {
		ca, cert, key := testCertificates(t)
		r.caFile = filepath.Join(dir, "ca.pem")
		write(t, r.caFile, ca, 0o644)
		write(t, filepath.Join(dir, "cert.pem"), cert, 0o644)
		write(t, filepath.Join(dir, "key.pem"), key, 0o600)
		extra += fmt.Sprintf("  tls:\n    certificate: %s\n    key: %s\n", filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(ca)
		tlsCfg.RootCAs = pool
	}
	var auth string
	if o.auth {
		r.user, r.pass = "pusher", "s3cret-pass"
		// distribution 2.8's htpasswd checks bcrypt hashes only
		// (registry/auth/htpasswd/htpasswd.go, bcrypt.CompareHashAndPassword).
		h, err := bcrypt.GenerateFromPassword([]byte(r.pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "htpasswd"), []byte(r.user+":"+string(h)+"\n"), 0o600)
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: test\n    path: %s\n", filepath.Join(dir, "htpasswd"))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	r.pushTr = tr
	for attempt := 0; ; attempt++ {
		r.addr = freePort(t)
		cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n  secret: test-secret\n%s%s", r.storage, r.addr, extra, auth)
		write(t, filepath.Join(dir, "config.yml"), []byte(cfg), 0o644)
		err := r.run(t, bin, filepath.Join(dir, "config.yml"))
		if err == nil {
			return r
		}
		if attempt == 2 {
			t.Fatalf("docker-registry did not start: %v\n%s", err, r.logText())
		}
	}
}

// run starts the registry and waits for its "listening on" line, which it
// logs after binding the address (distribution registry/registry.go).
func (r *registry) run(t *testing.T, bin, cfg string) error {
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
			if strings.Contains(line, "listening on "+r.addr) {
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

func (r *registry) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

// blobGets counts the registry's access-log lines for a GET of the blob.
func (r *registry) blobGets(repo string, digest v1.Hash) int {
	re := regexp.MustCompile(`"GET /v2/` + regexp.QuoteMeta(repo) + `/blobs/` + regexp.QuoteMeta(digest.String()) + ` HTTP/[0-9.]+" 200 `)
	return len(re.FindAllString(r.logText(), -1))
}

// push stores img under repo:tag and returns its reference by digest.
func (r *registry) push(t *testing.T, repo string, img v1.Image) string {
	t.Helper()
	ref, err := name.NewTag(r.addr+"/"+repo+":test", r.nameOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.remoteOpts()...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.addr + "/" + repo + "@" + d.String()
}

func (r *registry) pushIndex(t *testing.T, repo string, idx v1.ImageIndex) string {
	t.Helper()
	ref, err := name.NewTag(r.addr+"/"+repo+":test", r.nameOpts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx, r.remoteOpts()...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return r.addr + "/" + repo + "@" + d.String()
}

func (r *registry) nameOpts() []name.Option {
	if r.caFile == "" {
		return []name.Option{name.Insecure}
	}
	return nil
}

func (r *registry) remoteOpts() []remote.Option {
	opts := []remote.Option{remote.WithTransport(r.pushTr)}
	if r.user != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.pass}))
	}
	return opts
}

// options are a puller's settings for this registry, with a fresh cache.
func (r *registry) options(t *testing.T) Options {
	o := Options{CacheDir: filepath.Join(t.TempDir(), "cache"), CAFile: r.caFile, StallTimeout: 20 * time.Second}
	if r.caFile == "" {
		o.PlainHTTP = []string{r.addr}
	}
	if r.user != "" {
		o.AuthFile = authFile(t, r.addr, r.user, r.pass, 0o600)
	}
	return o
}

// authFile writes a Docker config.json with one login.
func authFile(t *testing.T, registry, user, pass string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	write(t, p, []byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, registry, auth)), mode)
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func write(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// testCertificates makes a CA and a certificate for 127.0.0.1 it signed.
func testCertificates(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
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

type entry = tartest.Entry

var (
	dir  = tartest.Dir
	file = tartest.File
	ls   = tartest.Ls
)

// tarLayer is a gzip layer holding the entries.
func tarLayer(t *testing.T, entries ...entry) v1.Layer {
	t.Helper()
	raw := tartest.Tar(t, entries...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage is a linux/amd64 image of the layers, with a command.
func testImage(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		OS: "linux", Architecture: "amd64",
		Config: v1.Config{Cmd: []string{"/bin/app", "--serve"}, Env: []string{"PORT=8080"}, WorkingDir: "/srv",
			ExposedPorts: map[string]struct{}{"8080/tcp": {}}},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.AppendLayers(img, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
