// Package layer turns the layers an instance lists into image files its
// microVM can attach as read-only drives: fetched from the artifact store,
// sha256-verified while they stream, cached by digest, and — for an
// executable layer — packed into a squashfs that holds the one program at its
// destination path.
//
// The cache is what makes a second start of the same app cheap and a crash
// mid-download harmless: every entry is written to a temporary file and
// renamed into place only once its digest has been checked, and an entry is
// used only while the digest record written beside it still matches the
// file (otherwise the file is hashed again, and fetched again if that fails).
package layer

import (
	"context"
	"fmt"
	"strings"
)

// Kind is what a layer's object is.
type Kind string

// The layer kinds desired.json knows.
const (
	Filesystem Kind = "filesystem" // a squashfs or ext4 image, attached as uploaded
	Executable Kind = "executable" // one program, packed by the host into a squashfs
	// OCIImage is an OCI image pinned by digest, pulled and flattened into
	// one squashfs by the cache's Images (nibrunner/image).
	OCIImage Kind = "image"
)

// Images is what pulls an image layer's image and collects the ones no
// layer needs: *image.Puller. The pulled images are cached by the digest
// their reference names.
type Images interface {
	// PullLayer makes the image reference names ready as one read-only
	// squashfs.
	// progress, when set, is called as the pull goes.
	PullLayer(ctx context.Context, reference string, progress func(Pull)) (Image, error)
	// PruneLayers removes every cached image none of the references in
	// keep names, and returns the bytes it freed.
	PruneLayers(keep []string) (int64, error)
}

// Spec is one layer as an instance lists it.
type Spec struct {
	// Index is the layer's position in the instance's layers list (0 is
	// the bottom); it only names the layer in errors.
	Index     int
	Kind      Kind
	Digest    string // lowercase hex sha256 of the stored object
	ObjectKey string
	// DestinationPath is where an executable layer's program lands.
	DestinationPath string
	// SizeBytes, when not nil, must equal the stored object's size.
	SizeBytes *int64
	// Reference is an image layer's image, pinned by digest.
	Reference string
}

// Name is how errors name the layer: "layer 1 (sha256 ab12cd34ef56…)".
func (s Spec) Name() string {
	if s.Kind == OCIImage {
		// The digest shortened as a filesystem layer's is, so the sentence
		// after it fits in a report's message.
		return fmt.Sprintf("layer %d (image %s)", s.Index, shortReference(s.Reference))
	}
	return fmt.Sprintf("layer %d (sha256 %s)", s.Index, short(s.Digest))
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12] + "…"
	}
	return digest
}

// Image is a layer ready to attach.
type Image struct {
	Path   string // the image file in the cache; never written to
	Format string // "squashfs" or "ext4"
	// Digest is the sha256 of the image file: the stored object's for a
	// filesystem layer, the packed squashfs's for an executable one.
	Digest string
	Size   int64
}

// Error is a layer that cannot be made ready. Its message names the layer
// and says what was wrong, which is what a person reads in reported.json.
type Error struct {
	Layer Spec
	Err   error
}

func (e *Error) Error() string { return e.Layer.Name() + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func validate(s Spec) error {
	if s.Kind == OCIImage {
		if s.Reference == "" {
			return fmt.Errorf("an image layer names no reference")
		}
		return nil // the puller reads the reference whole
	}
	if len(s.Digest) != 64 || strings.Trim(s.Digest, "0123456789abcdef") != "" {
		return fmt.Errorf("digest %q is not a lowercase hex sha256", s.Digest)
	}
	switch s.Kind {
	case Filesystem:
	case Executable:
		p := s.DestinationPath
		if p == "" || p[0] != '/' || p == "/" || p == "/sbin/init" {
			return fmt.Errorf("destinationPath %q must be an absolute path to a file other than /sbin/init", p)
		}
		for _, seg := range strings.Split(p[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("destinationPath %q has an empty, . or .. segment", p)
			}
		}
	default:
		return fmt.Errorf("kind %q is neither filesystem, executable nor image", s.Kind)
	}
	return nil
}
