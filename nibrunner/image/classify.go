package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// classify turns any failure of a pull into an *Error with a reason and a
// sentence.
func classify(r Reference, err error) *Error {
	ref := r.String()
	var pe *Error
	if errors.As(err, &pe) {
		return &Error{Ref: ref, Reason: pe.Reason, Sentence: pe.Sentence, Err: pe.Err}
	}
	e := &Error{Ref: ref, Err: err}
	var te *transport.Error
	var bm *blobMismatch
	switch {
	case errors.As(err, &bm):
		e.Reason = ReasonDigestMismatch
		e.Sentence = fmt.Sprintf("the registry sent bytes for %s that do not hash to it; the registry's copy is corrupt or something between rewrote it, so nothing of it was unpacked", bm.digest)
	case errors.Is(err, errStall):
		e.Reason = ReasonStalled
		e.Sentence = fmt.Sprintf("the registry %s stopped sending; it is retried later", r.Registry)
	case errors.As(err, &te):
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden || hasCode(te, transport.UnauthorizedErrorCode, transport.DeniedErrorCode):
			e.Reason = ReasonUnauthorized
			e.Sentence = fmt.Sprintf("the registry %s refused the credentials (HTTP %d); put a login for %q in the host's registry credentials file (Docker config.json auths)", r.Registry, te.StatusCode, r.Registry)
		case hasCode(te, transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode) || te.StatusCode == http.StatusNotFound:
			e.Reason = ReasonManifestUnknown
			e.Sentence = fmt.Sprintf("the registry %s has no manifest %s in %s; check the digest with `skopeo inspect docker://%s/%s:TAG` or `crane digest`", r.Registry, r.Digest, r.Repository, r.Registry, r.Repository)
		default:
			e.Reason = ReasonRegistry
			e.Sentence = fmt.Sprintf("the registry %s answered HTTP %d", r.Registry, te.StatusCode)
		}
	case strings.Contains(err.Error(), "does not match requested digest") || strings.Contains(err.Error(), "error verifying"):
		// go-containerregistry's manifest check (pkg/v1/remote/fetcher.go)
		// and blob check (internal/verify) have no exported error types.
		e.Reason = ReasonDigestMismatch
		e.Sentence = "the registry sent bytes that do not hash to the digest that names them"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed):
		e.Reason = ReasonDropped
		e.Sentence = fmt.Sprintf("the registry %s dropped the connection before a blob was whole; it is retried later", r.Registry)
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		e.Reason = ReasonLocal
		e.Sentence = "the pull was cancelled"
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http's text for a TLS handshake answered in plain HTTP
		// (net/http/transport.go); it has no error type.
		e.Reason = ReasonUnreachable
		e.Sentence = fmt.Sprintf("the registry %s answers plain HTTP, not HTTPS; give it TLS, or, when it is on this machine's loopback, name it in the host's [images] plain_http_registries", r.Registry)
	case isDial(err):
		e.Reason = ReasonUnreachable
		e.Sentence = fmt.Sprintf("the registry %s cannot be reached; check its address and, for TLS, the CA file", r.Registry)
	default:
		e.Reason = ReasonLocal
		e.Sentence = "the pull failed"
	}
	return e
}

func hasCode(te *transport.Error, codes ...transport.ErrorCode) bool {
	for _, d := range te.Errors {
		for _, c := range codes {
			if d.Code == c {
				return true
			}
		}
	}
	return false
}

func isDial(err error) bool {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return strings.Contains(err.Error(), "x509:") || strings.Contains(err.Error(), "tls:")
}
