package image

import (
	"context"
	"strings"
	"testing"
)

// Inspect reads what the image implies (manifest, layers, config) from the
// registry and fetches no layer.
func TestInspectReadsTheImagesConfigAndLayersWithoutFetchingALayer(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	img := twoLayers(t)
	ref := reg.push(t, "apps/web", img)
	o := reg.options(t)
	p, err := NewInspector(o)
	if err != nil {
		t.Fatal(err)
	}
	in, err := p.Inspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	m, _ := img.Manifest()
	if in.Digest != d.String() || in.ManifestDigest != d.String() || in.Platform != "linux/amd64" || in.Ref != ref {
		t.Errorf("inspected %+v, want %s pinned to %s for linux/amd64", in, ref, d)
	}
	if len(in.Layers) != 2 || in.Layers[1].Digest != m.Layers[1].Digest.String() || in.Layers[1].Size != m.Layers[1].Size {
		t.Errorf("layers %+v, want the manifest's two with their sizes", in.Layers)
	}
	if strings.Join(in.Config.Cmd, " ") != "/bin/app --serve" || in.Config.WorkingDir != "/srv" || in.Config.Env[0] != "PORT=8080" {
		t.Errorf("config %+v, want the image's cmd, working dir and env", in.Config)
	}
	if _, ok := in.Config.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v, want 8080/tcp", in.Config.ExposedPorts)
	}
	for _, l := range m.Layers {
		if n := reg.blobGets("apps/web", l.Digest); n != 0 {
			t.Errorf("inspecting fetched layer %s %d times", l.Digest, n)
		}
	}
	// An inspector has no cache: it pulls nothing.
	_, err = p.Pull(context.Background(), ref, nil)
	failure(t, err, ReasonConfig)
}

func TestInspectRefusesATagAndAnUnknownImageInASentence(t *testing.T) {
	reg := startRegistry(t, registryOpts{tls: true})
	p, err := NewInspector(reg.options(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Inspect(context.Background(), reg.addr+"/apps/web:latest")
	if msg := failure(t, err, ReasonBadReference); !strings.Contains(msg, "skopeo inspect") {
		t.Errorf("a tag's refusal should say how to pin it: %s", msg)
	}
	_, err = p.Inspect(context.Background(), reg.addr+"/apps/web@sha256:"+strings.Repeat("cd", 32))
	if msg := failure(t, err, ReasonManifestUnknown); !strings.Contains(msg, "no manifest sha256:cdcd") {
		t.Errorf("an unknown image's sentence should name its digest: %s", msg)
	}
}
