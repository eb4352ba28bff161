package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/minio/minio-go/v7"
)

// resumingReader is an object being read from S3 that survives a cut
// connection: when a read fails partway with a transient error (a reset,
// a timeout, a body cut short), it asks for the rest (a ranged GET from
// the first byte not yet read, only while the object's ETag is still the
// one the read began with) and reads on. restic's retrying backend
// loads the whole range again and hands its consumer a new reader
// (docs/decisions.md); our callers consume one stream they cannot rewind
// (a layer into its cache, a snapshot into its file), so only the bytes
// not yet read are asked for. A layer, a volume's seed or a memory
// snapshot of gigabytes is then not fetched again from its first byte
// for one dropped connection, nor its whole job failed. A read
// fails after s.retry.Attempts requests in a row have failed without a
// byte between them (the bytes a request gives reset the count).
type resumingReader struct {
	s        *S3
	ctx      context.Context
	key      string // the caller's key, for errors
	name     string // the object's name in the bucket
	etag     string // as minio-go gives it, unquoted
	size     int64
	obj      io.ReadCloser
	off      int64 // bytes read so far
	failures int   // requests failed since the last byte came
	err      error // the read's end: io.EOF or the error it gave up on
}

func (r *resumingReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := r.obj.Read(p)
		r.off += int64(n)
		if n > 0 {
			r.failures = 0
		}
		if err == nil {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			if r.off >= r.size {
				r.err = io.EOF
				return n, io.EOF
			}
			err = io.ErrUnexpectedEOF // ended short of its length: a cut too
		}
		rerr := r.reopen(err)
		if rerr != nil {
			r.err = rerr
		}
		if n > 0 {
			return n, nil // the bytes first; an error is the next Read's
		}
		if rerr != nil {
			return 0, rerr
		}
	}
}

// reopen replaces the failed request (which failed with err) by one for
// the bytes from r.off on, sent after the store's backoff, or says why it
// will not: the error was not transient, the attempts are spent, ctx
// ended, or the object changed since the read began.
func (r *resumingReader) reopen(err error) error {
	s := r.s
	r.obj.Close()
	for {
		r.failures++
		if resp, ok := s3Error(err); ok && resp.StatusCode == http.StatusPreconditionFailed {
			return r.fail("the object changed while it was read (its ETag is no longer "+r.etag+")", err)
		}
		if !transient(r.ctx, err) {
			return r.fail("reading failed", err)
		}
		if r.failures >= s.retry.Attempts {
			s.gaveUp.Add(1)
			return r.fail(fmt.Sprintf("reading failed on %d requests in a row; check the store and the link to it", r.failures), err)
		}
		t := s.clock.NewTimer(s.delay(r.failures))
		select {
		case <-t.C():
		case <-r.ctx.Done():
			t.Stop()
			return r.fail("stopped while waiting to ask for the rest", r.ctx.Err())
		}
		s.retries.Add(1)
		body, h, gerr := r.rest()
		if gerr != nil {
			err = gerr // a request for the rest that failed is one failure more
			continue
		}
		// The rest, of the object the read began with: a store that
		// ignored the range or If-Match would splice two objects.
		want := fmt.Sprintf("bytes %d-%d/%d", r.off, r.size-1, r.size)
		if got, etag := h.Get("Content-Range"), strings.Trim(h.Get("ETag"), `"`); got != want || etag != r.etag {
			body.Close()
			return r.fail("the object changed while it was read", fmt.Errorf("asked for %s of ETag %s, the store answered Content-Range %q with ETag %s", want, r.etag, got, etag))
		}
		r.obj = body
		return nil
	}
}

// rest sends the request for the object's bytes from r.off on, whole
// only while its ETag is r.etag (minio-go's Core: one request, and the
// answer's head as it came).
func (r *resumingReader) rest() (io.ReadCloser, http.Header, error) {
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(r.off, 0); err != nil {
		return nil, nil, err
	}
	if err := opts.SetMatchETag(r.etag); err != nil {
		return nil, nil, err
	}
	body, _, h, err := minio.Core{Client: r.s.client}.GetObject(r.ctx, r.s.bucket, r.name, opts)
	return body, h, err
}

func (r *resumingReader) fail(why string, err error) error {
	return fmt.Errorf("get %q from %s: %s after %d of its %d bytes: %w", r.key, r.s.url, why, r.off, r.size, err)
}

func (r *resumingReader) Close() error { return r.obj.Close() }
