package image

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/image/tartest"
)

func newPuller(t *testing.T, o Options) *Puller {
	t.Helper()
	testenv.RequireRoot(t) // the flattened tree keeps the image's owners
	testenv.RequireCommand(t, "mksquashfs", "unsquashfs")
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// failure asserts err is an *Error with the reason and returns its text.
func failure(t *testing.T, err error, want Reason) string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a pull failure (%s), got %v", want, err)
	}
	if e.Reason != want {
		t.Fatalf("want reason %s, got %s: %v", want, e.Reason, e)
	}
	t.Logf("%s: %v", e.Reason, e)
	return e.Error()
}

// unsquash extracts the image's squashfs and returns the folder.
func unsquash(t *testing.T, img Image) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "x")
	if b, err := exec.Command("unsquashfs", "-no-progress", "-d", out, img.Path).CombinedOutput(); err != nil {
		t.Fatalf("unsquashfs %s: %v\n%s", img.Path, err, b)
	}
	return out
}

// twoLayers is an image whose second layer deletes etc/secret through a
// whiteout and replaces srv/ through an opaque marker.
func twoLayers(t *testing.T) v1.Image {
	owned := file("srv/data/state", "state")
	owned.UID, owned.GID, owned.Mode = 1000, 1000, 0o640
	return testImage(t,
		tarLayer(t, dir("etc/"), file("etc/keep", "kept"), file("etc/secret", "lower"),
			dir("srv/"), file("srv/old.html", "old"), dir("srv/sub/"), file("srv/sub/deep", "old")),
		tarLayer(t, file("etc/.wh.secret", ""),
			dir("srv/"), file("srv/.wh..wh..opq", ""), file("srv/index.html", "hello"), dir("srv/data/"), owned,
			tartest.Symlink("bin/app", "/srv/index.html")),
	)
}

func TestATwoLayerImagePinnedByDigestPullsOverTLSIntoOneSquashfs(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	img := twoLayers(t)
	ref := reg.push(t, "apps/web", img)
	p := newPuller(t, reg.options(t))
	var last Progress
	got, err := p.Pull(context.Background(), ref, func(pr Progress) { last = pr })
	if err != nil {
		t.Fatal(err)
	}
	root := unsquash(t, got)
	if _, err := os.Lstat(filepath.Join(root, "etc/secret")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("etc/secret, deleted by the second layer's whiteout, is in the image: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "etc/keep")); string(b) != "kept" {
		t.Errorf("etc/keep = %q, want kept", b)
	}
	if names := ls(t, filepath.Join(root, "srv")); names != "data,index.html" {
		t.Errorf("srv holds %s; the opaque marker should leave only the second layer's data,index.html", names)
	}
	fi, err := os.Lstat(filepath.Join(root, "srv/data/state"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || fi.Mode().Perm() != 0o640 {
		t.Errorf("srv/data/state is uid %d mode %v, want 1000 and 0640 from the layer", st.Uid, fi.Mode())
	}
	if target, _ := os.Readlink(filepath.Join(root, "bin/app")); target != "/srv/index.html" {
		t.Errorf("bin/app -> %q, want /srv/index.html", target)
	}
	d, _ := img.Digest()
	if got.ManifestDigest != d.String() || got.Digest != d.String() {
		t.Errorf("digests %s / %s, want both %s", got.Digest, got.ManifestDigest, d)
	}
	if strings.Join(got.Config.Cmd, " ") != "/bin/app --serve" || got.Config.WorkingDir != "/srv" {
		t.Errorf("config %+v does not carry the image's cmd and working dir", got.Config)
	}
	if last.Phase != "done" || last.Fetched != last.FetchTotal || last.FetchTotal == 0 || last.Unpacked == 0 {
		t.Errorf("last progress %+v, want done with every byte fetched and some unpacked", last)
	}
}

func TestTwoPullsOfTheSameImageFetchEachBlobOnceAsTheRegistrysLogShows(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	img := twoLayers(t)
	ref := reg.push(t, "apps/shared", img)
	o := reg.options(t)
	p := newPuller(t, o)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	imgs := make([]Image, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			imgs[i], errs[i] = p.Pull(context.Background(), ref, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A daemon restarted on the same cache finds the image there too.
	again, err := newPuller(t, o).Pull(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cached || again.Path != imgs[0].Path || imgs[0].SquashfsDigest != imgs[1].SquashfsDigest {
		t.Errorf("the third pull should come from the cache at %s: %+v", imgs[0].Path, again)
	}
	m, _ := img.Manifest()
	blobs := []v1.Hash{m.Config.Digest}
	for _, l := range m.Layers {
		blobs = append(blobs, l.Digest)
	}
	for _, b := range blobs {
		if n := reg.blobGets("apps/shared", b); n != 1 {
			t.Errorf("the registry's log shows %d GETs of blob %s, want 1", n, b)
		}
	}
}

func TestATagWithoutADigestIsRefusedSayingHowToPinIt(t *testing.T) {
	p, err := New(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Pull(context.Background(), "registry.example:5000/apps/web:latest", nil)
	msg := failure(t, err, ReasonBadReference)
	for _, want := range []string{"names no digest", "skopeo inspect", "docker://registry.example:5000/apps/web:latest", "crane digest", "registry.example:5000/apps/web@sha256:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal should contain %q: %s", want, msg)
		}
	}
}

func TestABlobWhoseBytesDoNotMatchItsDigestIsRefusedBeforeUnpacking(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	img := twoLayers(t)
	ref := reg.push(t, "apps/corrupt", img)
	bad := reg.corrupt(t, img)
	p := newPuller(t, reg.options(t))
	_, err := p.Pull(context.Background(), ref, nil)
	msg := failure(t, err, ReasonDigestMismatch)
	if !strings.Contains(msg, bad.String()) {
		t.Errorf("the sentence should name the blob %s: %s", bad, msg)
	}
	if _, ok := p.Cached(mustParse(t, ref)); ok {
		t.Error("a refused image is in the cache")
	}
}

// corrupt flips one byte of the stored copy of img's second layer, which
// the registry serves as it is, and returns that layer's digest.
func (r *registry) corrupt(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	bad := m.Layers[1].Digest
	data := filepath.Join(r.storage, "docker/registry/v2/blobs/sha256", bad.Hex[:2], bad.Hex, "data")
	b, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	write(t, data, b, 0o644)
	return bad
}

func mustParse(t *testing.T, ref string) Reference {
	t.Helper()
	r, err := ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBasicAuthFromARootOnlyDockerConfigAndA401WithoutIt(t *testing.T) {
	reg := startRegistry(t, registryOpts{auth: true})
	ref := reg.push(t, "private/app", twoLayers(t))
	o := reg.options(t)
	if _, err := newPuller(t, o).Pull(context.Background(), ref, nil); err != nil {
		t.Fatalf("with the login in a 0600 config.json: %v", err)
	}
	anon := o
	anon.AuthFile, anon.CacheDir = "", filepath.Join(t.TempDir(), "c")
	_, err := newPuller(t, anon).Pull(context.Background(), ref, nil)
	msg := failure(t, err, ReasonUnauthorized)
	if !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, reg.addr) {
		t.Errorf("the sentence should say 401 and name the registry: %s", msg)
	}
	wrong := anon
	wrong.AuthFile = authFile(t, reg.addr, reg.user, "wrong", 0o600)
	_, err = newPuller(t, wrong).Pull(context.Background(), ref, nil)
	failure(t, err, ReasonUnauthorized)

	readable := anon
	readable.AuthFile = authFile(t, reg.addr, reg.user, reg.pass, 0o644)
	_, err = New(readable)
	msg = failure(t, err, ReasonConfig)
	if !strings.Contains(msg, "chmod 600") {
		t.Errorf("a group/world-readable credentials file should be refused saying chmod 600: %s", msg)
	}
}

func TestAnUnknownManifestIsReportedSo(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	reg.push(t, "apps/web", twoLayers(t))
	ref := reg.addr + "/apps/web@sha256:" + strings.Repeat("ab", 32)
	_, err := newPuller(t, reg.options(t)).Pull(context.Background(), ref, nil)
	msg := failure(t, err, ReasonManifestUnknown)
	if !strings.Contains(msg, "no manifest sha256:abab") {
		t.Errorf("the sentence should name the digest: %s", msg)
	}
}

func TestAnIndexWithoutLinuxAmd64IsRefusedNamingWhatItHas(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add:        twoLayers(t),
		Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}},
	})
	ref := reg.pushIndex(t, "apps/arm", idx)
	_, err := newPuller(t, reg.options(t)).Pull(context.Background(), ref, nil)
	msg := failure(t, err, ReasonNoPlatform)
	if !strings.Contains(msg, "no linux/amd64 image (it has linux/arm64/v8)") {
		t.Errorf("the refusal should name linux/amd64 and what the index has: %s", msg)
	}
}

func TestAnIndexWithLinuxAmd64PullsThatImageAndCachesByTheIndexDigest(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	amd := twoLayers(t)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: testImage(t, tarLayer(t, file("arm", "x"))), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	ref := reg.pushIndex(t, "apps/multi", idx)
	got, err := newPuller(t, reg.options(t)).Pull(context.Background(), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := amd.Digest()
	if got.ManifestDigest != d.String() || got.Digest != mustParse(t, ref).Digest {
		t.Errorf("got digest %s manifest %s, want the index's and the amd64 image's %s", got.Digest, got.ManifestDigest, d)
	}
}

// Each unsafe layer ends in its own reason and sentence, and leaves nothing
// in the cache.
func TestUnsafeLayersEachEndInTheirOwnSentence(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	big := file("big", "")
	big.Zeros = 3 << 20
	cases := []struct {
		name   string
		layer  v1.Layer
		reason Reason
		want   []string
	}{
		{"escape", tarLayer(t, file("../../../etc/cron.d/evil", "* * * * * root sh")), ReasonUnsafeLayer,
			[]string{`"../../../etc/cron.d/evil"`, "climbs out of the image's root"}},
		{"device", tarLayer(t, dir("dev/"), tartest.Device("dev/sda", tar.TypeBlock)), ReasonUnsafeLayer,
			[]string{`"dev/sda"`, "device node", "remove it from the image"}},
		{"toolarge", tarLayer(t, big), ReasonTooLarge,
			[]string{"more than the limit of 1048576 bytes"}},
	}
	o := reg.options(t)
	o.MaxUnpackedBytes = 1 << 20
	p := newPuller(t, o)
	for _, c := range cases {
		ref := reg.push(t, "apps/"+c.name, testImage(t, tarLayer(t, file("ok", "ok")), c.layer))
		_, err := p.Pull(context.Background(), ref, nil)
		msg := failure(t, err, c.reason)
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the sentence should contain %q: %s", c.name, w, msg)
			}
		}
		if !strings.Contains(msg, "layer 2") {
			t.Errorf("%s: the sentence should name the second layer: %s", c.name, msg)
		}
	}
	left, _ := os.ReadDir(filepath.Join(o.CacheDir, "images"))
	tmp, _ := os.ReadDir(filepath.Join(o.CacheDir, "tmp"))
	if len(left)+len(tmp) != 0 {
		t.Errorf("refused pulls left %d images and %d staging folders in the cache", len(left), len(tmp))
	}
}

// faultyProxy forwards to a registry and breaks the GETs of one blob: it
// sends the headers and half the body, then stalls until the client gives
// up, or drops the connection.
func faultyProxy(t *testing.T, upstream string, blob v1.Hash, mode string) string {
	t.Helper()
	done := make(chan struct{})
	addr := halfBlobProxy(t, upstream, blob, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if mode == "stall" {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		panic(http.ErrAbortHandler) // net/http closes the connection mid-body
	})
	t.Cleanup(func() { close(done) }) // before the proxy's Close: cleanups run last first
	return addr
}

// halfBlobProxy forwards to a registry, except the GETs of one blob: it
// sends the headers and half the body, flushed, then calls rest with the
// whole body.
func halfBlobProxy(t *testing.T, upstream string, blob v1.Hash, rest func(w http.ResponseWriter, r *http.Request, body []byte)) string {
	t.Helper()
	u, _ := url.Parse("http://" + upstream)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+blob.String()) {
			rp.ServeHTTP(w, r)
			return
		}
		resp, err := http.Get("http://" + upstream + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.Header().Set("Docker-Content-Digest", blob.String())
		w.WriteHeader(200)
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		rest(w, r, body)
	})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func TestARegistryThatStallsOrDropsTheConnectionMidBlobIsReportedSo(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	big := file("big", "")
	big.Zeros = 2 << 20
	img := testImage(t, tarLayer(t, big))
	ref := reg.push(t, "apps/flaky", img)
	m, _ := img.Manifest()
	for _, c := range []struct {
		mode   string
		reason Reason
		want   string
	}{
		{"stall", ReasonStalled, "stopped sending"},
		{"drop", ReasonDropped, "dropped the connection before a blob was whole"},
	} {
		proxy := faultyProxy(t, reg.addr, m.Layers[0].Digest, c.mode)
		o := reg.options(t)
		o.PlainHTTP = []string{proxy}
		if c.mode == "stall" {
			o.StallTimeout = 2 * time.Second
		}
		viaProxy := strings.Replace(ref, reg.addr, proxy, 1)
		_, err := newPuller(t, o).Pull(context.Background(), viaProxy, nil)
		msg := failure(t, err, c.reason)
		if !strings.Contains(msg, c.want) {
			t.Errorf("%s: the sentence should say %q: %s", c.mode, c.want, msg)
		}
		if !ReasonOf(err).Retryable() {
			t.Errorf("%s: %s should be retryable", c.mode, c.reason)
		}
	}
}

func TestPlainHTTPOnlyToANamedLoopbackRegistry(t *testing.T) {
	_, err := New(Options{CacheDir: t.TempDir(), PlainHTTP: []string{"192.168.1.10:5000"}})
	msg := failure(t, err, ReasonConfig)
	if !strings.Contains(msg, "only to a registry on this machine's loopback") {
		t.Errorf("plain HTTP off loopback should be refused saying so: %s", msg)
	}
	// A TLS registry whose CA the host does not trust is never retried
	// over plain HTTP, though go-containerregistry would for 127.0.0.1.
	reg := startRegistry(t, registryOpts{tls: true})
	ref := reg.push(t, "apps/web", twoLayers(t))
	o := reg.options(t)
	o.CAFile = ""
	_, err = newPuller(t, o).Pull(context.Background(), ref, nil)
	msg = failure(t, err, ReasonUnreachable)
	if !strings.Contains(msg, "certificate") {
		t.Errorf("the failure should be the certificate's: %s", msg)
	}
	// A plain-HTTP registry not named in the settings is refused saying
	// where to name it.
	plain := startRegistry(t, registryOpts{})
	pref := plain.push(t, "apps/web", twoLayers(t))
	o = plain.options(t)
	o.PlainHTTP = nil
	_, err = newPuller(t, o).Pull(context.Background(), pref, nil)
	msg = failure(t, err, ReasonUnreachable)
	if !strings.Contains(msg, "answers plain HTTP") || !strings.Contains(msg, "plain_http_registries") {
		t.Errorf("the failure should say the registry speaks plain HTTP and where to allow it: %s", msg)
	}
}
