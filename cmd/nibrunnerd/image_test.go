package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/hostconfig"
	"alpnib.dev/nibrunner/image/registrytest"
)

// webImage is a two-layer linux/amd64 image whose config says how it runs.
func webImage(t *testing.T, cfg v1.Config) v1.Image {
	t.Helper()
	var layers []v1.Layer
	for _, size := range []int64{2048, 512} {
		l, err := random.Layer(size, types.OCILayer)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	return imageOf(t, cfg, layers...)
}

// imageOf is a linux/amd64 image of the layers, bottom first, whose
// config says how it runs.
func imageOf(t *testing.T, cfg v1.Config, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{OS: "linux", Architecture: "amd64", Config: cfg, RootFS: v1.RootFS{Type: "layers"}})
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		t.Fatal(err)
	}
	return img
}

var webConfig = v1.Config{
	Entrypoint: []string{"/usr/bin/web"}, Cmd: []string{"--listen", ":8080"},
	Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "WEB_MODE=prod"},
	WorkingDir: "/srv/web", User: "web",
	ExposedPorts: map[string]struct{}{"9090/udp": {}, "8080/tcp": {}, "8443/tcp": {}},
}

// imageHost starts a registry and writes a host configuration whose
// [images] reaches it without TLS on loopback.
func imageHost(t *testing.T) (*registrytest.Registry, string) {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{})
	cfg := filepath.Join(t.TempDir(), "config.toml")
	doc := string(hostconfig.Default("")) + "\n[images]\nplain_http_registries = [\"" + reg.Addr + "\"]\n"
	if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return reg, cfg
}

func TestImageInspectPrintsTheManifestLayersAndHowTheImageRuns(t *testing.T) {
	reg, cfg := imageHost(t)
	img := webImage(t, webConfig)
	ref := reg.Push(t, "apps/web", img)
	out, err := execute(t, "image", "inspect", "--config", cfg, ref)
	if err != nil {
		t.Fatalf("image inspect: %v\n%s", err, out)
	}
	d, _ := img.Digest()
	m, _ := img.Manifest()
	for _, want := range []string{
		"reference   " + ref + "\n",
		"manifest    " + d.String() + "\n",
		"platform    linux/amd64\n",
		"layers      2, ",
		"  2  " + m.Layers[1].Digest.String() + "  ",
		`entrypoint  ["/usr/bin/web"]` + "\n",
		`cmd         ["--listen",":8080"]` + "\n",
		"workdir     /srv/web\n",
		"ports       8080/tcp 8443/tcp 9090/udp\n",
		"user        web\n",
		"  WEB_MODE=prod\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("image inspect should print %q:\n%s", want, out)
		}
	}
	js, err := execute(t, "image", "inspect", "--config", cfg, "-o", "json", ref)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		ManifestDigest string
		Layers         []struct{ Size int64 }
		Config         struct{ WorkingDir string }
	}
	if err := json.Unmarshal([]byte(js), &got); err != nil || got.ManifestDigest != d.String() || len(got.Layers) != 2 || got.Layers[0].Size != m.Layers[0].Size || got.Config.WorkingDir != "/srv/web" {
		t.Errorf("image inspect -o json: %+v (%v)\n%s", got, err, js)
	}
	for _, l := range m.Layers {
		if n := reg.BlobGets("apps/web", l.Digest); n != 0 {
			t.Errorf("inspect fetched layer %s %d times; it should read the manifest and config only", l.Digest, n)
		}
	}
}

func TestImageInspectRefusesATagOrAnUnknownImageInOneSentence(t *testing.T) {
	reg, cfg := imageHost(t)
	reg.Push(t, "apps/web", webImage(t, webConfig))
	_, err := execute(t, "image", "inspect", "--config", cfg, reg.Addr+"/apps/web:test")
	if err == nil || !strings.Contains(err.Error(), "names no digest") || !strings.Contains(err.Error(), "skopeo inspect") {
		t.Errorf("a tag should be refused saying how to pin it: %v", err)
	}
	_, err = execute(t, "image", "inspect", "--config", cfg, reg.Addr+"/apps/web@sha256:"+strings.Repeat("0f", 32))
	if err == nil || !strings.Contains(err.Error(), "has no manifest sha256:0f0f") || !strings.Contains(err.Error(), "check the digest") {
		t.Errorf("an unknown image should be refused naming its digest and what to do: %v", err)
	}
}

func TestAppFromImagePrintsADocumentCheckAccepts(t *testing.T) {
	reg, cfg := imageHost(t)
	ref := reg.Push(t, "apps/web", webImage(t, webConfig))
	out, err := execute(t, "app", "from-image", "--config", cfg, ref, "--app", "web", "--hostname", "web.apps.example.net")
	if err != nil {
		t.Fatalf("app from-image: %v\n%s", err, out)
	}
	// Notes go to standard error, which execute joins: the document is
	// what starts at the first "{".
	notes, doc, _ := strings.Cut(out, "{")
	doc = "{" + doc
	if !strings.Contains(notes, `user "web" is not applied`) || !strings.Contains(notes, "first exposed port") {
		t.Errorf("the notes should say the user is not applied and which port was chosen:\n%s", notes)
	}
	path := filepath.Join(t.TempDir(), "desired.json")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := execute(t, "check", path); err != nil || got != "ok\n" {
		t.Fatalf("check of the printed document: %q %v\n%s", got, err, doc)
	}
	// A host without [images] would fail the instance, and check says so.
	bare := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(bare, hostconfig.Default(""), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := execute(t, "check", "--config", bare, path); err != nil || !strings.Contains(got, "layers[0] is an image but this host pulls none: give its config.toml an [images] section") {
		t.Errorf("check against a host without [images] should name the image layer: %q %v", got, err)
	}
	d, err := desired.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	in := d.Instances[0]
	c := in.Config.Command
	if in.AppId != "web" || in.VolumeId != "web" || d.Volumes[0].VolumeId != "web" || d.Volumes[0].AppId != "web" {
		t.Errorf("instance %s on volume %s (volume %+v), want the app web on its own volume", in.AppId, in.VolumeId, d.Volumes[0])
	}
	if len(in.Layers) != 1 || in.Layers[0].Kind != desired.LayerImage || string(in.Layers[0].Reference) != ref {
		t.Errorf("layers %+v, want the image %s alone", in.Layers, ref)
	}
	if c.Program != "/usr/bin/web" || strings.Join(c.Args, " ") != "--listen :8080" || c.WorkingDirectory != "/srv/web" ||
		c.Environment["WEB_MODE"] != "prod" || c.Environment["PATH"] != "/usr/local/bin:/usr/bin:/bin" {
		t.Errorf("command %+v, want the image's entrypoint and cmd, working directory and environment written out", c)
	}
	if in.Config.HttpPort != 8080 || len(in.Hostnames) != 1 || in.Hostnames[0].Hostname != "web.apps.example.net" {
		t.Errorf("httpPort %d, hostnames %+v; want 8080 and web.apps.example.net", in.Config.HttpPort, in.Hostnames)
	}
}

func TestAppFromImageRefusesWhatItCannotWriteOutSayingWhichFlagToGive(t *testing.T) {
	reg, cfg := imageHost(t)
	noPort := webConfig
	noPort.ExposedPorts = nil
	relative := webConfig
	relative.Entrypoint = []string{"web"}
	for _, c := range []struct {
		name string
		cfg  v1.Config
		want string
	}{
		{"noport", noPort, "exposes no TCP port; give the port the app answers HTTP on with --http-port N"},
		{"relative", relative, `starts "web", not an absolute path`},
	} {
		ref := reg.Push(t, "apps/"+c.name, webImage(t, c.cfg))
		_, err := execute(t, "app", "from-image", "--config", cfg, ref, "--app", "web")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want a refusal saying %q, got %v", c.name, c.want, err)
		}
		args := []string{"app", "from-image", "--config", cfg, ref, "--app", "web", "--http-port", "8080", "--program", "/usr/bin/web"}
		if out, err := execute(t, args...); err != nil || !strings.Contains(out, `"program": "/usr/bin/web"`) || !strings.Contains(out, `"httpPort": 8080`) {
			t.Errorf("%s with --http-port and --program: %v\n%s", c.name, err, out)
		}
	}
	if _, err := execute(t, "app", "from-image", "--config", cfg, reg.Addr+"/apps/web:latest", "--app", "web"); err == nil || !strings.Contains(err.Error(), "crane digest") {
		t.Errorf("a tag should be refused saying how to pin it: %v", err)
	}
}
