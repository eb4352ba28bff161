package store

import (
	"context"
	"crypto/md5"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/clock"
	"github.com/minio/minio-go/v7"
)

// Retry is how a stream's requests are retried alone (PutStream's parts,
// its single PUT and its complete call, and the requests for the rest of
// an object whose read Get's reader lost partway, s3get.go): a request
// that fails with a transient error is sent again after
// min(Initial·Factor^(n−1), Max), jittered down by up to half, until
// Attempts requests have been sent. Every other request of the store is
// tried once, for its caller's backoff (see NewS3).
type Retry struct {
	// Attempts is how many times one request is sent in all (at least 1).
	Attempts int
	Initial  time.Duration
	Max      time.Duration
	Factor   float64
}

// DefaultRetry sends a request up to 6 times, waiting about 0.5, 1, 2, 4
// and 8 s between them: a flaky link gets some 15 s to come back before
// the upload is aborted and its job's own backoff takes over.
var DefaultRetry = Retry{Attempts: 6, Initial: 500 * time.Millisecond, Max: 15 * time.Second, Factor: 2}

// S3Stats is what an S3 store counts of its uploads, and of the reads it
// resumed (s3get.go), since it was opened, for an operator to tell a
// flaky store from a healthy one.
type S3Stats struct {
	// Retries counts requests sent again after a transient failure (a
	// part, or the rest of an object whose read was cut).
	Retries uint64
	// GaveUp counts requests that failed on every attempt; their
	// upload was aborted, or their read failed.
	GaveUp uint64
}

// Stats returns the store's counts so far.
func (s *S3) Stats() S3Stats {
	return S3Stats{Retries: s.retries.Load(), GaveUp: s.gaveUp.Load()}
}

// SetClock sets the clock retries wait on (clock.Real by default).
func (s *S3) SetClock(c clock.Clock) { s.clock = clock.Or(c) }

// SetRetry changes how a stream's requests are retried (DefaultRetry);
// fewer than 1 attempt is taken as 1.
func (s *S3) SetRetry(r Retry) {
	r.Attempts = max(r.Attempts, 1)
	s.retry = r
}

// delay is how long to wait before sending a request for the n+1st time:
// the backoff's delay for retry n, less a random part of up to half of it
// so that hosts slowed down together do not come back together.
func (s *S3) delay(n int) time.Duration {
	d := backoff.Delay(s.retry.Initial, s.retry.Max, s.retry.Factor, n)
	if d <= 1 {
		return d
	}
	return d - rand.N(d/2)
}

// attempt sends a request (do) until it succeeds, fails for good, or has
// been sent s.retry.Attempts times, waiting on the store's clock between
// tries. It returns how many times it was sent and its last error. A done
// ctx ends it at once: the error is then ctx's.
func (s *S3) attempt(ctx context.Context, do func(n int) error) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	for n := 1; ; n++ {
		err := do(n)
		if err == nil || !transient(ctx, err) {
			return n, err
		}
		if n >= s.retry.Attempts {
			s.gaveUp.Add(1)
			return n, err
		}
		t := s.clock.NewTimer(s.delay(n))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return n, fmt.Errorf("%w while waiting to send it again (attempt %d failed: %v)", ctx.Err(), n, err)
		}
		s.retries.Add(1)
	}
}

// failed is the error of request what (part 3, the complete call) of the
// put of key that attempt gave up on after n attempts; multipart says the
// put was a multipart upload, which PutStream aborts.
func (s *S3) failed(ctx context.Context, key, what string, multipart bool, n int, err error) error {
	resp, _ := s3Error(err)
	if resp.Code == "NoSuchBucket" {
		return s.wrap("put", key, err)
	}
	if resp.Code != "" {
		err = fmt.Errorf("%s (HTTP %d): %w", resp.Code, resp.StatusCode, err)
	}
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("put %q into %s: %s: %w", key, s.url, what, err)
	case transient(ctx, err):
		outcome := "nothing was stored"
		if multipart {
			outcome = "so the upload was aborted"
		}
		return fmt.Errorf("put %q into %s: %s failed on all %d attempts, %s; check the store and the link to it: %w", key, s.url, what, n, outcome, err)
	case resp.Code == "NoSuchUpload":
		return fmt.Errorf("put %q into %s: %s: the upload is gone, aborted by something else (a bucket lifecycle rule, another host cleaning up the same key); check what else writes under %s: %w", key, s.url, what, s.url, err)
	}
	return fmt.Errorf("put %q into %s: %s (attempt %d; not retried): %w", key, s.url, what, n, err)
}

// s3Error is the S3 error response err holds, if it holds one.
func s3Error(err error) (minio.ErrorResponse, bool) {
	var resp minio.ErrorResponse
	ok := errors.As(err, &resp)
	return resp, ok
}

// transient says whether a request that failed with err may succeed if
// sent again: a transport error (refused, reset, cut short, timed out) or
// an S3 error that says so (5xx, 408, 429, SlowDown and the other codes
// minio-go retries itself). A refusal (AccessDenied, NoSuchBucket, any
// other 4xx) is not, nor is anything once ctx is done.
func transient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if resp, ok := s3Error(err); ok {
		switch resp.Code {
		case "SlowDown", "SlowDownWrite", "SlowDownRead", "RequestTimeout", "RequestError",
			"InternalError", "ServiceUnavailable", "Throttling", "ThrottlingException",
			"RequestLimitExceeded", "RequestThrottled":
			return true
		}
		return resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode >= 500
	}
	var unknownCA x509.UnknownAuthorityError
	var badCert *tls.CertificateVerificationError
	if errors.As(err, &unknownCA) || errors.As(err, &badCert) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return false
	}
	return true
}

// multipartETag is the ETag S3 gives the object a multipart upload of parts
// completes: the MD5 of the parts' MD5s, then -<parts>.
func multipartETag(parts []minio.CompletePart) (string, bool) {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(p.ETag, `"`))
		if err != nil || len(b) != md5.Size {
			return "", false
		}
		h.Write(b)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

// completedEarlier says whether the object at name is what completing
// parts makes: a complete call sent again after its answer was lost finds
// the upload gone (NoSuchUpload) because the first one did complete it.
func (s *S3) completedEarlier(ctx context.Context, name string, parts []minio.CompletePart) bool {
	want, ok := multipartETag(parts)
	if !ok {
		return false
	}
	st, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	return err == nil && strings.Trim(st.ETag, `"`) == want
}
