package layer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// packedName is the cache name of the image packed from an executable
// layer: one per program and destination.
func packedName(s Spec) string {
	key := sha256.Sum256([]byte("executable\x00" + s.Digest + "\x00" + s.DestinationPath))
	return hex.EncodeToString(key[:])
}

// Bytes is the space the cache's files take on disk (allocated blocks, so
// sparse or partly written files count what they really use). It is what
// the host reports as used cacheBytes.
func (c *Cache) Bytes() (int64, error) {
	var total int64
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += allocated(info)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measure the layer cache: %w", err)
	}
	return total, nil
}

// entryOf names the cache entry a file of the cache belongs to: the entry
// itself (an object's digest, a packed image's NAME.sqfs), its record
// (ENTRY.sha256) or the record being written (ENTRY.sha256.tmp).
func entryOf(file string) string {
	return strings.TrimSuffix(strings.TrimSuffix(file, writingSuffix), recordSuffix)
}

// Prune removes every cached object and packed image that none of the
// given layers needs, and returns the bytes it freed. The daemon calls it
// with the layers of every instance it still knows, so an image in use is
// never removed.
func (c *Cache) Prune(keep []Spec) (int64, error) {
	objects := map[string]bool{}
	packed := map[string]bool{}
	var images []string
	var freed int64
	for _, s := range keep {
		if s.Kind == OCIImage {
			images = append(images, s.Reference)
			continue
		}
		objects[s.Digest] = true
		if s.Kind == Executable {
			packed[packedName(s)+".sqfs"] = true
		}
	}
	if c.Images != nil {
		n, err := c.Images.PruneLayers(images)
		freed += n
		if err != nil {
			return freed, fmt.Errorf("prune the layer cache's images: %w", err)
		}
	}
	// Each entry is removed under the lock Prepare takes for it, so a
	// prepare racing the prune sees the entry whole or not at all.
	lockPrefix := map[string]string{"objects": "object/", "packed": "packed/"}
	for sub, keepSet := range map[string]map[string]bool{"objects": objects, "packed": packed} {
		entries, err := os.ReadDir(filepath.Join(c.dir, sub))
		if err != nil {
			return freed, fmt.Errorf("prune the layer cache: %w", err)
		}
		for _, e := range entries {
			name := entryOf(e.Name())
			if keepSet[name] {
				continue
			}
			unlock := c.lock(lockPrefix[sub] + strings.TrimSuffix(name, ".sqfs"))
			p := filepath.Join(c.dir, sub, e.Name())
			if info, err := os.Lstat(p); err == nil {
				if err := os.Remove(p); err == nil {
					freed += allocated(info)
				}
			}
			unlock()
		}
	}
	return freed, nil
}
