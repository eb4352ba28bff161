package volume

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"alpnib.dev/nibrunner/checkpoint"
)

// restore writes the checkpoint the seed fetched (a sparse container, see
// checkpoint.WriteSparse) back as the volume's image at path, sparse, and
// grows it to size when that is larger. It is written beside its final
// name and renamed into place once whole, so a refusal or a crash leaves
// no volume. A checkpoint larger than size, of a newer format, or holding
// no ext4 filesystem is refused. destinationPath is not read: the image is
// the volume's whole filesystem.
func (l *Local) restore(ctx context.Context, spec Spec, sd *seeding, path string, size int64) error {
	key := sd.c.ObjectKey
	f, err := os.Open(sd.archive)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	h, err := checkpoint.ReadHeader(r)
	if err != nil {
		return fmt.Errorf("initialContents %q: %w", key, err)
	}
	if h.Size > size {
		return fmt.Errorf("initialContents %q: %w: the checkpoint holds a volume of %d bytes and sizeBytes is %d; ask for %d or more (a volume only grows)", key, ErrDoesNotFit, h.Size, spec.SizeBytes, h.Size)
	}
	sd.p.setPhase(Unpacking)
	tmp := filepath.Join(l.Dir, ".new-"+spec.VolumeID+"-"+randHex())
	defer os.Remove(tmp)
	if err := checkpoint.ReadRuns(ctx, r, h, tmp, &sd.p.unpacked); err != nil {
		return fmt.Errorf("initialContents %q: write the checkpoint back: %w", key, err)
	}
	if head, err := sniff(tmp, 1082); err != nil || len(head) < 1082 || head[1080] != 0x53 || head[1081] != 0xEF {
		return fmt.Errorf("initialContents %q: the checkpoint holds no ext4 filesystem, so it is not of a volume this host family made", key)
	}
	if h.Size < size {
		sd.p.setPhase(Formatting)
		if err := l.grow(ctx, tmp, size); err != nil {
			return fmt.Errorf("initialContents %q: grow the restored volume from %d to %d bytes: %w", key, h.Size, size, err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := l.dropSeed(spec.VolumeID); err != nil {
		return fmt.Errorf("the volume is restored, but what seeding it left is not removed: %w", err)
	}
	return nil
}
