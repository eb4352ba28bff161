package image

import (
	"context"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Inspection is what an image's manifest and config say about it, read
// without fetching a layer.
type Inspection struct {
	// Ref is the reference inspected, as registry/repository@sha256:….
	Ref string `json:"ref"`
	// Digest is the reference's digest (an index's or the image's).
	Digest string `json:"digest"`
	// ManifestDigest is the linux/amd64 image manifest's digest: Digest
	// itself, or the one an index chose.
	ManifestDigest string `json:"manifestDigest"`
	// Platform is the image's os/architecture as its config says.
	Platform string `json:"platform"`
	// Layers are the manifest's layers, bottom first.
	Layers []LayerInfo `json:"layers"`
	// Config is what the image implies about running it: entrypoint, cmd,
	// env, working directory, user, exposed ports.
	Config v1.Config `json:"config"`
}

// LayerInfo is one layer as the manifest lists it.
type LayerInfo struct {
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType"`
	// Size is the compressed blob's size in bytes.
	Size int64 `json:"size"`
}

// Inspect fetches ref's manifest and config (choosing linux/amd64 from an
// index), each checked against its digest, and no layer. A failure is an
// *Error, as Pull's are.
func (p *Puller) Inspect(ctx context.Context, ref string) (Inspection, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return Inspection{}, &Error{Ref: ref, Op: "inspect", Reason: ReasonBadReference, Sentence: err.Error()}
	}
	res, err := p.resolve(ctx, r)
	if err != nil {
		e := classify(r, err)
		e.Op = "inspect"
		return Inspection{}, e
	}
	platform := res.config.OS + "/" + res.config.Architecture
	if res.config.OS == "" {
		platform = "linux/amd64" // an index chose it, or the config names none
	}
	in := Inspection{Ref: r.String(), Digest: r.Digest, ManifestDigest: res.digest.String(), Platform: platform, Config: res.config.Config, Layers: []LayerInfo{}}
	for _, l := range res.manifest.Layers {
		in.Layers = append(in.Layers, LayerInfo{Digest: l.Digest.String(), MediaType: string(l.MediaType), Size: l.Size})
	}
	return in, nil
}
