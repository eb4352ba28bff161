// Package image pulls an OCI or Docker image pinned by digest from a registry
// (the OCI distribution protocol, through go-containerregistry's remote
// client), verifies every blob, flattens its linux/amd64 layers into one tree
// with package flatten and packs that tree into one read-only squashfs,
// cached on disk by the digest the reference names.
package image

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"alpnib.dev/nibrunner/desired"
)

// Reference is an image reference pinned by digest:
// registry/repository@sha256:<64 hex>.
type Reference struct {
	// Registry is the registry's host[:port], e.g. "registry.example:5000";
	// Docker Hub's references without a host get "index.docker.io".
	Registry string
	// Repository is the repository's path inside the registry.
	Repository string
	// Digest is "sha256:" and 64 lowercase hex digits: the manifest (or
	// index) digest the reference is pinned to.
	Digest string
}

// ParseReference reads registry/repository@sha256:<hex>. A reference with a
// tag and no digest is refused with a sentence saying how to pin it; a tag
// beside the digest (repo:tag@sha256:…) is accepted and the tag ignored, as
// registries do.
func ParseReference(s string) (Reference, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Reference{}, fmt.Errorf("image reference is empty; name an image as registry/repository@sha256:<digest>")
	}
	// desired.json's rule, so that check, the daemon and a pull say the
	// same sentence.
	if problem := desired.ImageReferenceProblem(s); problem != "" {
		return Reference{}, fmt.Errorf("image reference %q %s", s, problem)
	}
	at := strings.LastIndex(s, "@")
	repo, dgst := s[:at], s[at+1:]
	repo = withoutTag(repo)
	d, err := name.NewDigest(repo+"@"+dgst, name.StrictValidation)
	if err != nil {
		return Reference{}, fmt.Errorf("image reference %q: %w; write it as registry/repository@sha256:<digest>", s, err)
	}
	return Reference{Registry: d.Context().RegistryStr(), Repository: d.Context().RepositoryStr(), Digest: dgst}, nil
}

// withoutTag drops a ":tag" after the last path element (a colon in the
// registry's host:port is kept).
func withoutTag(repo string) string {
	slash := strings.LastIndex(repo, "/")
	if colon := strings.LastIndex(repo, ":"); colon > slash {
		return repo[:colon]
	}
	return repo
}

// String is registry/repository@sha256:<hex>.
func (r Reference) String() string {
	return r.Registry + "/" + r.Repository + "@" + r.Digest
}

func (r Reference) name(opts ...name.Option) (name.Digest, error) {
	return name.NewDigest(r.String(), opts...)
}
