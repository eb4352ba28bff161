package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// ErrNotModified is returned (wrapped) by GetIfChanged when the object
// still has the ETag the caller holds.
var ErrNotModified = errors.New("not modified")

// GetIfChanged reads a small object whole unless its ETag is still etag:
// one conditional GET (If-None-Match), which costs a request and no body
// when nothing changed. An empty etag reads it unconditionally. It returns
// the bytes and the object's ETag; an object larger than limit bytes is
// refused.
func (s *S3) GetIfChanged(ctx context.Context, key, etag string, limit int64) ([]byte, string, error) {
	name, err := s.object("get", key)
	if err != nil {
		return nil, "", err
	}
	opts := minio.GetObjectOptions{}
	if etag != "" {
		if err := opts.SetMatchETagExcept(etag); err != nil {
			return nil, "", err
		}
	}
	body, info, _, err := minio.Core{Client: s.client}.GetObject(ctx, s.bucket, name, opts)
	if err != nil {
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotModified {
			return nil, etag, fmt.Errorf("get %q in %s: %w", key, s.url, ErrNotModified)
		}
		return nil, "", s.wrap("get", key, err)
	}
	defer body.Close()
	if info.Size > limit {
		return nil, "", fmt.Errorf("get %q in %s: the object is %d bytes; at most %d are read", key, s.url, info.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, "", s.wrap("get", key, err)
	}
	if int64(len(b)) > limit {
		return nil, "", fmt.Errorf("get %q in %s: the object is more than %d bytes", key, s.url, limit)
	}
	return b, info.ETag, nil
}

// PutSmall stores b under key in one request with its content type.
func (s *S3) PutSmall(ctx context.Context, key string, b []byte, contentType string) error {
	name, err := s.object("put", key)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, s.bucket, name, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{ContentType: contentType})
	if err != nil {
		return s.wrap("put", key, err)
	}
	return nil
}
