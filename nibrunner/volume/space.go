package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// FreeBytes is the space an unprivileged write may still take on the disk
// dir is on (statfs f_bavail × f_bsize). A dir not made yet is measured at
// its nearest parent that exists, the disk it will be made on.
func FreeBytes(dir string) (uint64, error) {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			return st.Bavail * uint64(st.Bsize), nil
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return 0, fmt.Errorf("free space of the volume folder %s: %w", dir, err)
		}
	}
}

// FreeBytes is the free space of the disk l's volumes are made on.
func (l *Local) FreeBytes(ctx context.Context) (uint64, error) { return FreeBytes(l.Dir) }

// FreeBytes is the free space of the disk f's volumes are made on.
func (f Files) FreeBytes(ctx context.Context) (uint64, error) { return FreeBytes(f.Dir) }
