package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"

	"alpnib.dev/nibrunner/clock"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// DefaultPartSize is the multipart chunk S3 puts use: objects larger than it
// (and any put of unknown size) go up in parts, so a multi-gigabyte layer or
// export never has to fit in one request.
const DefaultPartSize = 16 << 20

// S3 is a store in an S3 bucket under an optional prefix: key a/b is the
// object <prefix>/a/b.
type S3 struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	url      string
	partSize uint64
	clock    clock.Clock
	retry    Retry
	retries  atomic.Uint64
	gaveUp   atomic.Uint64
}

// S3Env names the environment variables NewS3 reads, first match wins.
var S3Env = struct {
	Endpoint, Region []string
}{
	Endpoint: []string{"NIB_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"},
	Region:   []string{"NIB_S3_REGION", "AWS_REGION", "AWS_DEFAULT_REGION"},
}

// NewS3 opens s3://bucket/prefix. The endpoint is the first of NIB_S3_ENDPOINT,
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL that is set (a URL; http:// turns TLS
// off; a bare host:port means https), else AWS itself. The region comes from
// NIB_S3_REGION, AWS_REGION or AWS_DEFAULT_REGION, the credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (/ AWS_SESSION_TOKEN). A custom
// endpoint is addressed path-style, which every S3 look-alike understands.
func NewS3(ctx context.Context, rawURL string) (*S3, error) {
	return newS3(ctx, rawURL, nil)
}

// newS3 is NewS3 sending its requests through transport (minio-go's
// default when nil).
func newS3(ctx context.Context, rawURL string, transport http.RoundTripper) (*S3, error) {
	bucket, prefix, err := parseS3URL(rawURL)
	if err != nil {
		return nil, err
	}
	endpoint, secure, custom, err := s3Endpoint()
	if err != nil {
		return nil, fmt.Errorf("open artifact store %s: %w", rawURL, err)
	}
	lookup := minio.BucketLookupAuto
	if custom {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:        credentials.NewEnvAWS(),
		Secure:       secure,
		Region:       firstEnv(S3Env.Region),
		BucketLookup: lookup,
		// One attempt a request: every caller retries on its own backoff
		// (the report uploader, the background jobs, the fleet poll, the
		// pass), and minio-go's default of 10 tries, each up to a second
		// apart, ran inside every one of those attempts. A stream's parts
		// are retried alone, by PutStream (Retry).
		MaxRetries: 1,
		Transport:  transport,
	})
	if err != nil {
		return nil, fmt.Errorf("open artifact store %s: %w", rawURL, err)
	}
	return &S3{client: client, bucket: bucket, prefix: prefix, url: rawURL, partSize: DefaultPartSize,
		clock: clock.Real, retry: DefaultRetry}, nil
}

// SetPartSize changes the multipart chunk (at least 5 MiB, S3's floor).
func (s *S3) SetPartSize(n uint64) {
	if n < 5<<20 {
		n = 5 << 20
	}
	s.partSize = n
}

func parseS3URL(raw string) (bucket, prefix string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return "", "", fmt.Errorf("open artifact store %q: expected s3://bucket/prefix", raw)
	}
	if u.User != nil || u.RawQuery != "" {
		return "", "", fmt.Errorf("open artifact store %q: an s3:// URL holds only a bucket and a prefix; credentials and endpoint come from the environment", raw)
	}
	prefix = strings.Trim(u.Path, "/")
	if prefix != "" {
		if err := checkKey(prefix); err != nil {
			return "", "", fmt.Errorf("open artifact store %q: prefix: %w", raw, err)
		}
		prefix += "/"
	}
	return u.Host, prefix, nil
}

func s3Endpoint() (host string, secure, custom bool, err error) {
	raw := firstEnv(S3Env.Endpoint)
	if raw == "" {
		return "s3.amazonaws.com", true, false, nil
	}
	if !strings.Contains(raw, "://") {
		return raw, true, true, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false, false, fmt.Errorf("S3 endpoint %q from the environment is not a URL", raw)
	}
	switch u.Scheme {
	case "http":
		return u.Host, false, true, nil
	case "https":
		return u.Host, true, true, nil
	}
	return "", false, false, fmt.Errorf("S3 endpoint %q from the environment: scheme must be http or https", raw)
}

func firstEnv(names []string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

func (s *S3) object(op, key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", fmt.Errorf("%s %q in %s: %w", op, key, s.url, err)
	}
	return s.prefix + key, nil
}

func (s *S3) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	name, err := s.object("get", key)
	if err != nil {
		return nil, 0, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, s.wrap("get", key, err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, 0, s.wrap("get", key, err)
	}
	if st.ETag == "" {
		return obj, st.Size, nil // nothing to hold the rest to: read once
	}
	return &resumingReader{s: s, ctx: ctx, key: key, name: name, etag: st.ETag, size: st.Size, obj: obj}, st.Size, nil
}

func (s *S3) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	name, err := s.object("put", key)
	if err != nil {
		return err
	}
	cr := &countingReader{r: r}
	_, err = s.client.PutObject(ctx, s.bucket, name, cr, size, minio.PutObjectOptions{
		PartSize:    s.partSize,
		ContentType: "application/octet-stream",
	})
	if err != nil {
		return s.wrap("put", key, err)
	}
	if size >= 0 {
		// minio-go reads exactly size bytes; a reader holding more was
		// mis-announced, and what was stored is a truncation of it.
		var one [1]byte
		if n, _ := io.ReadFull(r, one[:]); n > 0 {
			_ = s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{})
			return fmt.Errorf("put %q into %s: the reader holds more than the %d bytes announced", key, s.url, size)
		}
	}
	return nil
}

func (s *S3) Stat(ctx context.Context, key string) (Info, error) {
	name, err := s.object("stat", key)
	if err != nil {
		return Info{}, err
	}
	st, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return Info{}, s.wrap("stat", key, err)
	}
	return Info{Key: key, Size: st.Size}, nil
}

// Delete removes the object. S3 deletes are silent about missing keys, so
// Delete stats first to keep the interface's ErrNotFound promise.
func (s *S3) Delete(ctx context.Context, key string) error {
	name, err := s.object("delete", key)
	if err != nil {
		return err
	}
	if _, err := s.Stat(ctx, key); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return s.wrap("delete", key, err)
	}
	return nil
}

func (s *S3) wrap(op, key string, err error) error {
	resp, _ := s3Error(err)
	if resp.Code == "NoSuchKey" || resp.StatusCode == http.StatusNotFound && resp.Code != "NoSuchBucket" {
		return fmt.Errorf("%s %q in %s: %w", op, key, s.url, ErrNotFound)
	}
	if resp.Code == "NoSuchBucket" {
		return fmt.Errorf("%s %q in %s: bucket %q does not exist; create it or fix store_url: %w", op, key, s.url, s.bucket, err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s %q in %s: %w", op, key, s.url, err)
	}
	return fmt.Errorf("%s %q in %s: %w", op, key, s.url, err)
}
