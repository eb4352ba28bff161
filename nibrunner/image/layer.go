package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"alpnib.dev/nibrunner/layer"
)

// The puller is the layer cache's Images: an image layer of desired.json
// is the squashfs Pull makes, attached as any filesystem layer is.
var _ layer.Images = (*Puller)(nil)

// PullLayer pulls reference and returns its squashfs as a layer ready to
// attach, telling progress (when set) how the pull goes. Its digest is the
// squashfs's own, as a filesystem layer's is its object's.
func (p *Puller) PullLayer(ctx context.Context, reference string, progress func(layer.Pull)) (layer.Image, error) {
	var each func(Progress)
	if progress != nil {
		each = func(pr Progress) {
			if pr.Phase != "done" {
				progress(layer.Pull{Phase: pr.Phase, Fetched: pr.Fetched, FetchTotal: pr.FetchTotal, Unpacked: pr.Unpacked, Layer: pr.Layer, Layers: pr.Layers})
			}
		}
	}
	img, err := p.Pull(ctx, reference, each)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return layer.Image{}, &layerError{e}
		}
		return layer.Image{}, err
	}
	return layer.Image{Path: img.Path, Format: "squashfs", Digest: strings.TrimPrefix(img.SquashfsDigest, "sha256:"), Size: img.Size}, nil
}

// layerError is a pull's failure as the layer cache's error wraps it: the
// layer's name already says the reference, so it is the sentence alone,
// with the cause only where the sentence is general. The report's message
// is at most 512 characters, and the sentence says what to do.
type layerError struct{ pull *Error }

func (e *layerError) Error() string {
	switch e.pull.Reason {
	case ReasonLocal, ReasonRegistry, ReasonUnreachable:
		if e.pull.Err != nil {
			return fmt.Sprintf("%s (%v)", e.pull.Sentence, e.pull.Err)
		}
	}
	return e.pull.Sentence
}

func (e *layerError) Unwrap() error { return e.pull }

// PruneLayers removes every cached image that no reference in keep names
// by digest, each under the lock a pull of it takes, and returns the bytes
// it freed. A reference that does not parse keeps nothing.
func (p *Puller) PruneLayers(keep []string) (int64, error) {
	kept := map[string]bool{}
	for _, k := range keep {
		if r, err := ParseReference(k); err == nil {
			kept[filepath.Base(p.imageDir(r.Digest))] = true
		}
	}
	root := filepath.Join(p.opts.CacheDir, "images")
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("list the cached images: %w", err)
	}
	var freed int64
	for _, e := range entries {
		if kept[e.Name()] {
			continue
		}
		digest := strings.Replace(e.Name(), "-", ":", 1)
		unlock := p.lock(digest)
		dir := filepath.Join(root, e.Name())
		size := dirBytes(dir)
		if err := os.RemoveAll(dir); err == nil {
			freed += size
		}
		unlock()
	}
	return freed, nil
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
