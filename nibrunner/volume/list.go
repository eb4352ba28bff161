package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Info is a volume as it is on the host: what the daemon observes of it.
type Info struct {
	SizeBytes uint64
	Path      string
	// AllocatedBytes is what the file holds on disk (its blocks): a
	// sparse volume may still fill the rest of SizeBytes.
	AllocatedBytes uint64
}

// List returns every volume in l.Dir by id (the daemon observes the host's
// volumes through it each pass).
func (l *Local) List(ctx context.Context) (map[string]Info, error) {
	return ListFiles(l.Dir, ".ext4")
}

// ListFiles returns the volumes kept as regular files <dir>/<id><ext>,
// skipping hidden files (a volume being made is staged under a dot name). A folder
// that does not exist holds no volumes.
func ListFiles(dir, ext string) (map[string]Info, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list volumes in %s: %w", dir, err)
	}
	out := make(map[string]Info, len(entries))
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		v := Info{SizeBytes: uint64(info.Size()), Path: filepath.Join(dir, e.Name())}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			v.AllocatedBytes = uint64(st.Blocks) * 512 // st_blocks counts 512-byte units
		}
		out[id] = v
	}
	return out, nil
}
