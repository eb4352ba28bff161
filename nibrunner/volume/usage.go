package volume

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"
)

// Usage is how full a volume is.
type Usage struct {
	TotalBytes uint64
	UsedBytes  uint64
	MeasuredAt time.Time
}

// The ext4 superblock fields Usage reads (offsets inside the superblock,
// which starts 1024 bytes into the filesystem).
const (
	superblockOffset  = 1024
	superblockSize    = 1024
	sbBlocksCountLo   = 0x04
	sbFreeBlocksLo    = 0x0C
	sbLogBlockSize    = 0x18
	sbMagic           = 0x38
	sbFeatureIncompat = 0x60
	sbBlocksCountHi   = 0x150
	sbFreeBlocksHi    = 0x158
	incompat64Bit     = 0x80
)

// ReadUsage measures an ext4 filesystem from its superblock, without
// mounting it or running a tool: total is every block, used is every block
// not free (metadata, journal and data alike). ext4 writes the free count
// back to the superblock lazily, so for a volume attached to a running guest
// the figure is as of the guest's last superblock write; for a detached
// volume it is exact.
func ReadUsage(r io.ReaderAt) (Usage, error) {
	sb := make([]byte, superblockSize)
	if _, err := r.ReadAt(sb, superblockOffset); err != nil {
		return Usage{}, fmt.Errorf("read the ext4 superblock: %w", err)
	}
	if m := binary.LittleEndian.Uint16(sb[sbMagic:]); m != 0xEF53 {
		return Usage{}, fmt.Errorf("not an ext4 filesystem: magic %#04x where 0xef53 belongs", m)
	}
	logBlock := binary.LittleEndian.Uint32(sb[sbLogBlockSize:])
	if logBlock > 6 {
		return Usage{}, fmt.Errorf("ext4 superblock says blocks are 1024<<%d bytes, which no ext4 uses", logBlock)
	}
	block := uint64(1024) << logBlock
	blocks := uint64(binary.LittleEndian.Uint32(sb[sbBlocksCountLo:]))
	free := uint64(binary.LittleEndian.Uint32(sb[sbFreeBlocksLo:]))
	if binary.LittleEndian.Uint32(sb[sbFeatureIncompat:])&incompat64Bit != 0 {
		blocks |= uint64(binary.LittleEndian.Uint32(sb[sbBlocksCountHi:])) << 32
		free |= uint64(binary.LittleEndian.Uint32(sb[sbFreeBlocksHi:])) << 32
	}
	if free > blocks {
		return Usage{}, fmt.Errorf("ext4 superblock says %d of %d blocks are free", free, blocks)
	}
	return Usage{TotalBytes: blocks * block, UsedBytes: (blocks - free) * block}, nil
}

// Usage measures volume id.
func (l *Local) Usage(ctx context.Context, id string) (Usage, error) {
	if !idPattern.MatchString(id) {
		return Usage{}, &Error{VolumeID: id, Err: fmt.Errorf("%q is not a volume identifier", id)}
	}
	f, err := os.Open(l.Path(id))
	if err != nil {
		return Usage{}, &Error{VolumeID: id, Err: fmt.Errorf("measure: %w", err)}
	}
	defer f.Close()
	u, err := ReadUsage(f)
	if err != nil {
		return Usage{}, &Error{VolumeID: id, Err: fmt.Errorf("measure: %w", err)}
	}
	u.MeasuredAt = time.Now().UTC()
	return u, nil
}
