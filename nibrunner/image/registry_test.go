package image

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"alpnib.dev/nibrunner/image/registrytest"
	"alpnib.dev/nibrunner/image/tartest"
)

// registry is registrytest's registry under the names these tests use.
type registry struct {
	*registrytest.Registry
	addr, storage, caFile, user, pass string
}

type registryOpts struct {
	tls  bool // serve TLS with a certificate from a test CA
	auth bool // require basic auth (htpasswd, bcrypt)
}

func startRegistry(t *testing.T, o registryOpts) *registry {
	t.Helper()
	r := registrytest.Start(t, registrytest.Options{TLS: o.tls, Auth: o.auth})
	return &registry{Registry: r, addr: r.Addr, storage: r.Storage, caFile: r.CAFile, user: r.User, pass: r.Pass}
}

func (r *registry) blobGets(repo string, d v1.Hash) int                 { return r.BlobGets(repo, d) }
func (r *registry) push(t *testing.T, repo string, img v1.Image) string { return r.Push(t, repo, img) }
func (r *registry) pushIndex(t *testing.T, repo string, idx v1.ImageIndex) string {
	return r.PushIndex(t, repo, idx)
}

func write(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
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

var (
	dir  = tartest.Dir
	file = tartest.File
	ls   = tartest.Ls
	// tarLayer is a gzip layer holding the entries.
	tarLayer = tartest.Layer
)

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
