package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Dir is a store in a local folder: key a/b/c is the file <root>/a/b/c.
// Every access goes through an os.Root, so neither a crafted key nor a
// symlink planted inside the folder reaches a file outside it.
type Dir struct {
	path string
	root *os.Root
}

// NewDir opens the folder at path (absolute; created if missing) as a store.
func NewDir(dir string) (*Dir, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("open artifact folder %q: the path must be absolute", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open artifact folder: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open artifact folder: %w", err)
	}
	return &Dir{path: dir, root: root}, nil
}

// Path returns the folder the store lives in.
func (d *Dir) Path() string { return d.path }

// Close releases the folder handle.
func (d *Dir) Close() error { return d.root.Close() }

func (d *Dir) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := checkKey(key); err != nil {
		return nil, 0, fmt.Errorf("get %q from %s: %w", key, d.path, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f, err := d.root.Open(filepath.FromSlash(key))
	if err != nil {
		return nil, 0, d.wrap("get", key, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, d.wrap("get", key, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("get %q from %s: %w (it is not a regular file)", key, d.path, ErrNotFound)
	}
	return f, st.Size(), nil
}

func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) (err error) {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("put %q into %s: %w", key, d.path, err)
	}
	name := filepath.FromSlash(key)
	if dir := path.Dir(key); dir != "." {
		if err := d.root.MkdirAll(filepath.FromSlash(dir), 0o755); err != nil {
			return d.wrap("put", key, err)
		}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(name), ".put-"+hex.EncodeToString(rnd[:]))
	f, err := d.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return d.wrap("put", key, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			_ = d.root.Remove(tmp)
		}
	}()
	cr := &countingReader{r: r}
	if _, err := io.Copy(f, ContextReader(ctx, cr)); err != nil {
		return d.wrap("put", key, err)
	}
	if size >= 0 && cr.n != size {
		return fmt.Errorf("put %q into %s: the reader gave %d bytes but %d were announced", key, d.path, cr.n, size)
	}
	if err := f.Sync(); err != nil {
		return d.wrap("put", key, err)
	}
	if err := f.Close(); err != nil {
		return d.wrap("put", key, err)
	}
	if err := d.root.Rename(tmp, name); err != nil {
		return d.wrap("put", key, err)
	}
	return nil
}

func (d *Dir) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("stat %q in %s: %w", key, d.path, err)
	}
	st, err := d.root.Stat(filepath.FromSlash(key))
	if err != nil {
		return Info{}, d.wrap("stat", key, err)
	}
	if !st.Mode().IsRegular() {
		return Info{}, fmt.Errorf("stat %q in %s: %w (it is not a regular file)", key, d.path, ErrNotFound)
	}
	return Info{Key: key, Size: st.Size()}, nil
}

func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %q from %s: %w", key, d.path, err)
	}
	if _, err := d.Stat(ctx, key); err != nil {
		return err
	}
	if err := d.root.Remove(filepath.FromSlash(key)); err != nil {
		return d.wrap("delete", key, err)
	}
	return nil
}

func (d *Dir) wrap(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %q in %s: %w", op, key, d.path, ErrNotFound)
	}
	return fmt.Errorf("%s %q in %s: %w", op, key, d.path, err)
}
