package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
)

// Streamer is what both stores also do for checkpoints and exports: take a
// stream of unknown length that never becomes visible at its key until it
// is whole, and clean up what a stream cut short left behind.
type Streamer interface {
	Store
	// PutStream stores everything r yields under key and returns the
	// byte count. On S3 it is a multipart upload of parts of the store's
	// part size (at least 5 MiB), partsInFlight of them in memory at once; an error
	// aborts the upload, so nothing is ever visible at key half-written.
	PutStream(ctx context.Context, key string, r io.Reader) (int64, error)
	// AbortIncompleteAt removes what interrupted puts of key left: S3's
	// incomplete multipart uploads of it, a folder's scratch files beside
	// it. It returns how many it removed.
	AbortIncompleteAt(ctx context.Context, key string) (int, error)
	// List returns the objects under prefix.
	List(ctx context.Context, prefix string) ([]Info, error)
	// URL names key for a person: s3://bucket/prefix/key or the file.
	URL(key string) string
}

var (
	_ Streamer = (*S3)(nil)
	_ Streamer = (*Dir)(nil)
)

// PutStream implements Streamer with a multipart upload driven part by
// part (minio-go's Core), so the upload id is ours to abort and each part
// is retried alone (Retry): a part that failed is sent again from the
// buffer that holds it, and the parts that went up are not. A stream that
// ends within its first part goes up as one PUT instead, retried the same
// way. Uploads an earlier attempt left incomplete at key (its abort
// failed: the store was down) are aborted first.
func (s *S3) PutStream(ctx context.Context, key string, r io.Reader) (n int64, err error) {
	name, err := s.object("put", key)
	if err != nil {
		return 0, err
	}
	if _, err := s.AbortIncompleteAt(ctx, key); err != nil {
		return 0, err
	}
	first := make([]byte, s.partSize)
	m, rerr := io.ReadFull(r, first)
	if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
		return 0, fmt.Errorf("put %q into %s: read what to upload: %w", key, s.url, rerr)
	}
	core := minio.Core{Client: s.client}
	opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
	if rerr != nil {
		tries, err := s.attempt(ctx, func(int) error {
			_, err := core.PutObject(ctx, s.bucket, name, bytes.NewReader(first[:m]), int64(m), "", "", opts)
			return err
		})
		if err != nil {
			return 0, s.failed(ctx, key, "the object's PUT", false, tries, err)
		}
		return int64(m), nil
	}
	id, err := core.NewMultipartUpload(ctx, s.bucket, name, opts)
	if err != nil {
		return 0, s.wrap("put", key, err)
	}
	defer func() {
		if err != nil {
			// Best effort on a context of its own: the caller's may be
			// what ended. Left behind, AbortIncomplete finds it.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = core.AbortMultipartUpload(actx, s.bucket, name, id)
			cancel()
		}
	}()
	parts, n, err := s.putParts(ctx, core, key, name, id, first, r)
	if err != nil {
		return n, err
	}
	tries, err := s.attempt(ctx, func(try int) error {
		_, err := core.CompleteMultipartUpload(ctx, s.bucket, name, id, parts, opts)
		if resp, _ := s3Error(err); try > 1 && resp.Code == "NoSuchUpload" && s.completedEarlier(ctx, name, parts) {
			return nil
		}
		return err
	})
	if err != nil {
		return n, s.failed(ctx, key, "the complete call", true, tries, err)
	}
	return n, nil
}

// partsInFlight is how many parts of one stream are uploaded at once: while
// one goes up the next is read (compressed, archived), so the producer and
// the network overlap. Each holds a part-sized buffer.
const partsInFlight = 2

// putParts uploads first, a whole part, then reads the rest of r part by
// part and uploads the parts, partsInFlight at a time; it returns them in
// order for CompleteMultipartUpload.
func (s *S3) putParts(ctx context.Context, core minio.Core, key, name, id string, first []byte, r io.Reader) ([]minio.CompletePart, int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pool := make(chan []byte, partsInFlight)
	pool <- first
	for range partsInFlight - 1 {
		pool <- nil
	}
	var (
		mu       sync.Mutex
		parts    []minio.CompletePart
		firstErr error
		wg       sync.WaitGroup
		n        int64
	)
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}
	failed := func() bool { mu.Lock(); defer mu.Unlock(); return firstErr != nil }
	for num := 1; !failed(); num++ {
		var buf []byte
		select {
		case buf = <-pool:
		case <-ctx.Done():
			fail(ctx.Err())
			continue
		}
		if buf == nil {
			buf = make([]byte, s.partSize)
		}
		m, rerr := len(buf), error(nil)
		if num > 1 {
			m, rerr = io.ReadFull(r, buf)
		}
		if rerr != nil && rerr != io.EOF && rerr != io.ErrUnexpectedEOF {
			fail(fmt.Errorf("put %q into %s: read what to upload: %w", key, s.url, rerr))
			break
		}
		if m > 0 {
			n += int64(m)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { pool <- buf }()
				var p minio.ObjectPart
				tries, err := s.attempt(ctx, func(int) error {
					var err error
					p, err = core.PutObjectPart(ctx, s.bucket, name, id, num, bytes.NewReader(buf[:m]), int64(m), minio.PutObjectPartOptions{})
					return err
				})
				if err != nil {
					fail(s.failed(ctx, key, fmt.Sprintf("part %d", num), true, tries, err))
					return
				}
				mu.Lock()
				parts = append(parts, minio.CompletePart{PartNumber: num, ETag: p.ETag})
				mu.Unlock()
			}()
		} else {
			pool <- buf
		}
		if rerr != nil {
			break
		}
	}
	wg.Wait()
	if firstErr != nil {
		return nil, n, firstErr
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].PartNumber < parts[j].PartNumber })
	return parts, n, nil
}

// AbortIncompleteAt implements Streamer.
func (s *S3) AbortIncompleteAt(ctx context.Context, key string) (int, error) {
	if _, err := s.object("abort the uploads of", key); err != nil {
		return 0, err
	}
	return s.abort(ctx, key)
}

// abort aborts the incomplete multipart uploads of key (listed by it as a
// prefix, then matched exactly).
func (s *S3) abort(ctx context.Context, key string) (int, error) {
	core := minio.Core{Client: s.client}
	n := 0
	keyMarker, idMarker := "", ""
	for {
		res, err := core.ListMultipartUploads(ctx, s.bucket, s.prefix+key, keyMarker, idMarker, "", 1000)
		if err != nil {
			return n, s.wrap("list the incomplete uploads of", key, err)
		}
		for _, u := range res.Uploads {
			if u.Key != s.prefix+key {
				continue
			}
			if err := core.AbortMultipartUpload(ctx, s.bucket, u.Key, u.UploadID); err != nil {
				return n, s.wrap("abort the incomplete upload of", strings.TrimPrefix(u.Key, s.prefix), err)
			}
			n++
		}
		if !res.IsTruncated {
			return n, nil
		}
		keyMarker, idMarker = res.NextKeyMarker, res.NextUploadIDMarker
	}
}

// List implements Streamer.
func (s *S3) List(ctx context.Context, prefix string) ([]Info, error) {
	var out []Info
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true}) {
		if o.Err != nil {
			return nil, s.wrap("list", prefix+"…", o.Err)
		}
		out = append(out, Info{Key: strings.TrimPrefix(o.Key, s.prefix), Size: o.Size})
	}
	return out, nil
}

// URL implements Streamer.
func (s *S3) URL(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// PutStream implements Streamer: a folder's Put already writes a scratch
// file beside the key and renames it into place.
func (d *Dir) PutStream(ctx context.Context, key string, r io.Reader) (int64, error) {
	cr := &countingReader{r: r}
	err := d.Put(ctx, key, cr, -1)
	return cr.n, err
}

// abortUnder removes the scratch files of puts that never finished (.put-*
// in the folder of prefix and below).
func (d *Dir) abortUnder(prefix string) (int, error) {
	n := 0
	err := d.walk(prefix, func(rel string, e fs.DirEntry) error {
		if strings.HasPrefix(e.Name(), ".put-") {
			if err := d.root.Remove(rel); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// AbortIncompleteAt implements Streamer: a folder's scratch files do not
// name their key, so it removes those in the key's folder.
func (d *Dir) AbortIncompleteAt(ctx context.Context, key string) (int, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	return d.abortUnder(key)
}

// List implements Streamer.
func (d *Dir) List(ctx context.Context, prefix string) ([]Info, error) {
	var out []Info
	err := d.walk(prefix, func(rel string, e fs.DirEntry) error {
		if strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() || !strings.HasPrefix(filepath.ToSlash(rel), prefix) {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		out = append(out, Info{Key: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	return out, err
}

// walk visits the files under the folder prefix names (its part up to the
// last slash).
func (d *Dir) walk(prefix string, visit func(rel string, e fs.DirEntry) error) error {
	start := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = filepath.FromSlash(prefix[:i])
	}
	err := fs.WalkDir(d.root.FS(), filepath.ToSlash(start), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			return nil
		}
		return visit(filepath.FromSlash(p), e)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("list %s under %q: %w", d.path, prefix, err)
	}
	return nil
}

// URL implements Streamer.
func (d *Dir) URL(key string) string { return filepath.Join(d.path, filepath.FromSlash(key)) }
