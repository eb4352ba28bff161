package image

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/store"
)

// An image layer of desired.json goes through the layer cache like the
// seed's two kinds: the cache hands it to the puller, gets one squashfs
// back, names the layer by its reference when the pull fails, and prunes
// the image once no layer names it.
func TestTheLayerCachePreparesAnImageLayerAndCollectsIt(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	ref := reg.push(t, "apps/web", twoLayers(t))
	opts := reg.options(t)
	dir := t.TempDir()
	opts.CacheDir = filepath.Join(dir, "layers", "oci")
	p := newPuller(t, opts)
	st, err := store.Open(context.Background(), "file://"+filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := layer.NewCache(filepath.Join(dir, "layers"), st)
	if err != nil {
		t.Fatal(err)
	}
	spec := layer.Spec{Index: 0, Kind: layer.OCIImage, Reference: ref}

	// A cache that pulls no images says how to let it.
	if _, err := c.Prepare(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "[images] section") {
		t.Fatalf("a cache without a puller prepared an image layer, or said %v", err)
	}
	c.Images = p
	imgs, err := c.PrepareAll(context.Background(), []layer.Spec{spec})
	if err != nil {
		t.Fatal(err)
	}
	got := imgs[0]
	if got.Format != "squashfs" || !strings.HasPrefix(got.Path, opts.CacheDir) || len(got.Digest) != 64 {
		t.Fatalf("prepared %+v, want a squashfs in the image cache named by its sha256", got)
	}
	root := unsquash(t, Image{Path: got.Path})
	if b, _ := os.ReadFile(filepath.Join(root, "etc/keep")); string(b) != "kept" {
		t.Errorf("the layer's etc/keep = %q, want kept", b)
	}
	if used, err := c.Bytes(); err != nil || used < got.Size {
		t.Errorf("the layer cache counts %d bytes (%v), less than the image's %d", used, err, got.Size)
	}

	// Kept while a layer names it; gone once none does.
	if freed, err := c.Prune([]layer.Spec{spec}); err != nil || freed != 0 {
		t.Fatalf("a prune keeping the image freed %d (%v)", freed, err)
	}
	if freed, err := c.Prune(nil); err != nil || freed < got.Size {
		t.Fatalf("a prune keeping nothing freed %d bytes (%v), want at least the image's %d", freed, err, got.Size)
	}
	if _, err := os.Stat(got.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pruned image is still there: %v", err)
	}

	// A failed pull is the layer's error, naming it by reference.
	missing := strings.Replace(ref, "apps/web", "apps/gone", 1)
	_, err = c.Prepare(context.Background(), layer.Spec{Index: 2, Kind: layer.OCIImage, Reference: missing})
	var le *layer.Error
	var ie *Error
	if !errors.As(err, &le) || !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), "layer 2 (image "+missing[:strings.Index(missing, "@")]+"@sha256:") {
		t.Errorf("a missing image's error %v, want the layer's naming the reference and the pull's reason", err)
	}
}
