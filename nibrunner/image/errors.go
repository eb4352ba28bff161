package image

import (
	"errors"
	"fmt"
)

// Reason says why a pull failed, for a report and for the caller's retry
// policy (Retryable).
type Reason string

const (
	// ReasonBadReference: the reference is not registry/repository@sha256:….
	ReasonBadReference Reason = "bad-reference"
	// ReasonUnauthorized: the registry answered 401 or 403.
	ReasonUnauthorized Reason = "unauthorized"
	// ReasonManifestUnknown: the registry has no manifest with that digest.
	ReasonManifestUnknown Reason = "manifest-unknown"
	// ReasonNoPlatform: an index without a linux/amd64 image.
	ReasonNoPlatform Reason = "no-linux-amd64"
	// ReasonDigestMismatch: a manifest or blob's bytes do not hash to the
	// digest that names them.
	ReasonDigestMismatch Reason = "digest-mismatch"
	// ReasonStalled: the registry sent nothing for Options.StallTimeout.
	ReasonStalled Reason = "stalled"
	// ReasonDropped: the connection ended before a blob was whole.
	ReasonDropped Reason = "connection-dropped"
	// ReasonUnreachable: no connection (refused, DNS, TLS handshake).
	ReasonUnreachable Reason = "unreachable"
	// ReasonUnsafeLayer: a layer's tar is refused by the flattener (an
	// entry escaping the root, a device node, a link out of the tree).
	ReasonUnsafeLayer Reason = "unsafe-layer"
	// ReasonTooLarge: the image unpacks past Options.MaxUnpackedBytes.
	ReasonTooLarge Reason = "too-large"
	// ReasonConfig: the host's pull settings are wrong (credentials file
	// readable by others, CA file unreadable, plain HTTP to a non-loopback
	// registry).
	ReasonConfig Reason = "config"
	// ReasonRegistry: any other registry answer (5xx, an unexpected code).
	ReasonRegistry Reason = "registry"
	// ReasonLocal: the host failed (disk full, mksquashfs failed).
	ReasonLocal Reason = "local"
)

// Retryable is whether the same pull may succeed later without anyone
// changing the image, the reference or the host's settings.
func (r Reason) Retryable() bool {
	switch r {
	case ReasonStalled, ReasonDropped, ReasonUnreachable, ReasonRegistry, ReasonLocal:
		return true
	}
	return false
}

// Error is every failure of Puller.Pull: the reference, the reason and a
// sentence for a person (Error()), wrapping the cause.
type Error struct {
	Ref string
	// Op is what was asked of Ref: "pull" (also when empty) or "inspect".
	Op     string
	Reason Reason
	// Sentence says what happened and what to do, without the cause's
	// library text.
	Sentence string
	Err      error
}

func (e *Error) Error() string {
	what := "image puller"
	if e.Ref != "" {
		op := e.Op
		if op == "" {
			op = "pull"
		}
		what = op + " " + e.Ref
	}
	if e.Err == nil {
		return fmt.Sprintf("%s: %s", what, e.Sentence)
	}
	return fmt.Sprintf("%s: %s (%v)", what, e.Sentence, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf is err's Reason when it is (or wraps) an *Error, else "".
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}
