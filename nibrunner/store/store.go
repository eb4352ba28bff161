// Package store is the artifact store nibrunnerd fetches layers and volume
// seeds from and writes exports to: a flat namespace of keys mapped to
// immutable byte streams. Two backends sit behind one small interface so the
// rest of the daemon never learns which one a host is configured with: a
// local folder (the default an install writes, and what tests use) and S3 or
// anything that speaks it (through minio-go).
//
// The interface is deliberately the four calls the daemon needs and no more:
// no listing, no metadata. Callers verify what they read (layers carry a
// sha256), so a store is trusted to deliver bytes, not to vouch for them.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// ErrNotFound is returned (wrapped) by Get, Stat and Delete when no object has
// the key. Test for it with errors.Is.
var ErrNotFound = errors.New("no such object")

// Info describes one stored object.
type Info struct {
	Key  string
	Size int64
}

// Store reads and writes objects by key.
type Store interface {
	// Get opens the object for reading and returns its size. The caller
	// closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Put stores r under key, replacing any object there. size is the number
	// of bytes r yields, or -1 when unknown. A reader that yields a different
	// number of bytes than size fails the put, and nothing is stored.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Stat describes the object without reading it.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object. Deleting a missing key is ErrNotFound.
	Delete(ctx context.Context, key string) error
}

// Open returns the store a store_url names: an absolute folder path (or
// file:///path) or s3://bucket/prefix. S3 endpoint, region and credentials
// come from the environment (see NewS3), never from the URL, so a config file
// never holds a secret.
func Open(ctx context.Context, url string) (Store, error) {
	switch {
	case strings.HasPrefix(url, "s3://"):
		return NewS3(ctx, url)
	case strings.HasPrefix(url, "file://"):
		return NewDir(strings.TrimPrefix(url, "file://"))
	case filepath.IsAbs(url):
		return NewDir(url)
	case url == "":
		return nil, errors.New("open artifact store: store_url is empty; give an absolute folder path or s3://bucket/prefix")
	default:
		return nil, fmt.Errorf("open artifact store %q: not an absolute folder path nor s3://bucket/prefix", url)
	}
}

// checkKey refuses keys a store cannot hold safely. Keys are relative,
// slash-separated names (ObjectKey in desired.json: 1–1024 characters); a key
// that would climb out of its folder or prefix, or name the folder itself, is
// refused before any backend sees it.
func checkKey(key string) error {
	switch {
	case key == "":
		return errors.New("object key is empty")
	case len(key) > 1024:
		return fmt.Errorf("object key is %d characters long; at most 1024 are allowed", len(key))
	case strings.ContainsAny(key, "\x00\\"):
		return fmt.Errorf("object key %q holds a NUL or a backslash", key)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("object key %q is absolute; keys are relative to the store", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("object key %q has an empty, . or .. segment; keys cannot leave the store", key)
		}
	}
	return nil
}

// countingReader counts the bytes read through it, so a put can tell a
// short or long reader from a truthful one.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// ContextReader wraps r so a long copy stops once ctx is done: each Read
// first returns ctx's error if there is one. A reader that blocks inside a
// single Read is not interrupted; this bounds copies of files and streams
// that make steady progress.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Fetch copies the object at key into w and checks it on the way: exactly
// the size the store announced, and hashing to digest (hex sha256), since a
// store is trusted to deliver bytes, not to vouch for them. It returns the
// bytes copied; on an error w may hold part or all of the object, so the
// caller writes to a scratch file it drops on failure. The copy stops once
// ctx is done.
func Fetch(ctx context.Context, st Store, key, digest string, w io.Writer) (int64, error) {
	r, size, err := st.Get(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("fetch %q from the artifact store: %w", key, err)
	}
	defer r.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(ContextReader(ctx, r), size+1))
	if err != nil {
		return n, fmt.Errorf("fetch %q from the artifact store: %w", key, err)
	}
	if n != size {
		return n, fmt.Errorf("fetch %q from the artifact store: announced %d bytes, read %d", key, size, n)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return n, fmt.Errorf("digest mismatch: the store's object %q hashes to %s, not %s; upload the right object or fix the digest", key, got, digest)
	}
	return n, nil
}
