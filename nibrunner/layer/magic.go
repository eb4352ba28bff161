package layer

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Where the two filesystems the guest mounts put their magic numbers.
const (
	squashfsMagic     = "hsqs" // bytes 0–3, little-endian 0x73717368
	ext4MagicOffset   = 1080   // superblock at 1024, s_magic at +0x38
	ext4Magic         = 0xEF53 // little-endian
	magicProbeLength  = ext4MagicOffset + 2
	squashfsFormat    = "squashfs"
	ext4Format        = "ext4"
	describedPrefixes = 4
)

// Format reads the image's magic and returns "squashfs" or "ext4", or an
// error saying what was found instead, so a person can tell a tarball or a
// truncated upload from a real image.
func Format(r io.ReaderAt) (string, error) {
	buf := make([]byte, magicProbeLength)
	n, err := r.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("read the image's magic: %w", err)
	}
	buf = buf[:n]
	if n >= 4 && string(buf[:4]) == squashfsMagic {
		return squashfsFormat, nil
	}
	if n >= magicProbeLength && binary.LittleEndian.Uint16(buf[ext4MagicOffset:]) == ext4Magic {
		return ext4Format, nil
	}
	return "", fmt.Errorf("not a squashfs or ext4 image: %s; upload a squashfs (mksquashfs) or ext4 (mke2fs) image, or make it an executable layer", describe(buf))
}

func describe(buf []byte) string {
	if len(buf) == 0 {
		return "the object is empty"
	}
	head := buf
	if len(head) > describedPrefixes {
		head = head[:describedPrefixes]
	}
	s := fmt.Sprintf("found %x at byte 0", head)
	if kind := sniff(buf); kind != "" {
		s += " (" + kind + ")"
	}
	if len(buf) >= magicProbeLength {
		s += fmt.Sprintf(" and %#04x at byte %d where squashfs wants \"hsqs\" and ext4 0xef53", binary.LittleEndian.Uint16(buf[ext4MagicOffset:]), ext4MagicOffset)
	} else {
		s += fmt.Sprintf(", and the object is only %d bytes long, too short for an ext4 superblock", len(buf))
	}
	return s
}

// sniff names a few formats people upload by mistake.
func sniff(b []byte) string {
	switch {
	case len(b) >= 4 && string(b[:4]) == "\x7fELF":
		return "an ELF program: declare it kind executable"
	case len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b:
		return "a gzip file"
	case len(b) >= 4 && string(b[:4]) == "PK\x03\x04":
		return "a zip file"
	case len(b) >= 263 && string(b[257:262]) == "ustar":
		return "a tar archive"
	case len(b) >= 4 && string(b[:4]) == "sqsh":
		return "a big-endian squashfs, which Linux does not mount"
	}
	return ""
}
