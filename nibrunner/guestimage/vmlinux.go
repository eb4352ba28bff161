package guestimage

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"alpnib.dev/internal/atomicfile"
)

// The guest boots the kernel's ELF image (vmlinux) through its PVH entry
// point instead of the bzImage: QEMU maps an ELF kernel from its file, a
// page-cache copy every guest shares, where it reads a bzImage into memory
// of its own and keeps it for the guest's lifetime (13.5 MiB per guest for
// Debian's cloud kernel). The guest also skips the decompression.
// Debian ships the bzImage only; its payload is the ELF image, compressed.

// x86 boot protocol header fields (Documentation/arch/x86/boot.rst).
const (
	bootSetupSects    = 0x1f1
	bootHeaderMagic   = 0x202 // "HdrS"
	bootVersion       = 0x206
	bootPayloadOffset = 0x248 // from the protected-mode code, 2.08+
	bootPayloadLength = 0x24c
)

// lz4LegacyMagic opens a stream in LZ4's legacy frame format (lz4 -l),
// which the kernel build uses for CONFIG_KERNEL_LZ4.
const lz4LegacyMagic = 0x184c2102

// lz4LegacyBlock is the largest block the legacy format holds decompressed.
const lz4LegacyBlock = 8 << 20

// xenPHYS32Entry is the ELF note (owner "Xen") that gives the 32-bit PVH
// entry point QEMU boots an ELF kernel through (XEN_ELFNOTE_PHYS32_ENTRY).
const xenPHYS32Entry = 18

// writeVmlinux writes the ELF kernel inside the bzImage at bz to out,
// unless an earlier build did, and returns out.
func writeVmlinux(bz, out string) (string, error) {
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	b, err := os.ReadFile(bz)
	if err != nil {
		return "", fmt.Errorf("read the kernel: %w", err)
	}
	k, err := extractVmlinux(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", bz, err)
	}
	if err := atomicfile.WriteFile(out, k, 0o644); err != nil {
		return "", fmt.Errorf("write the ELF kernel: %w", err)
	}
	return out, nil
}

// extractVmlinux returns the ELF kernel inside a bzImage whose payload is
// LZ4-compressed, and checks it has a PVH entry point.
func extractVmlinux(bz []byte) ([]byte, error) {
	if len(bz) < 0x250 || string(bz[bootHeaderMagic:bootHeaderMagic+4]) != "HdrS" {
		return nil, errors.New("not a bzImage (no HdrS boot header)")
	}
	if v := binary.LittleEndian.Uint16(bz[bootVersion:]); v < 0x208 {
		return nil, fmt.Errorf("boot protocol %#x has no payload fields (want 2.08 or later)", v)
	}
	sects := int(bz[bootSetupSects])
	if sects == 0 {
		sects = 4
	}
	start := (sects + 1) * 512
	off := start + int(binary.LittleEndian.Uint32(bz[bootPayloadOffset:]))
	n := int(binary.LittleEndian.Uint32(bz[bootPayloadLength:]))
	if off < start || n < 8 || off+n > len(bz) {
		return nil, fmt.Errorf("payload at %d+%d lies outside the %d-byte bzImage", off, n, len(bz))
	}
	payload := bz[off : off+n]
	if binary.LittleEndian.Uint32(payload) != lz4LegacyMagic {
		return nil, fmt.Errorf("payload is not LZ4 (starts % x; the kernel was built with another CONFIG_KERNEL_ compression)", payload[:4])
	}
	// The build appends the decompressed size (size_append).
	want := int(binary.LittleEndian.Uint32(payload[len(payload)-4:]))
	out, err := unlz4Legacy(payload[:len(payload)-4], want)
	if err != nil {
		return nil, fmt.Errorf("decompress the kernel: %w", err)
	}
	if len(out) != want {
		return nil, fmt.Errorf("decompressed kernel is %d bytes, the bzImage says %d", len(out), want)
	}
	if err := checkPVH(out); err != nil {
		return nil, err
	}
	return out, nil
}

// unlz4Legacy decompresses a legacy-format LZ4 stream: the magic, then
// blocks each led by its compressed size (a repeated magic starts a
// concatenated stream).
func unlz4Legacy(in []byte, sizeHint int) ([]byte, error) {
	out := make([]byte, 0, sizeHint)
	in = in[4:]
	for len(in) > 0 {
		if len(in) < 4 {
			return nil, fmt.Errorf("%d stray bytes after the last block", len(in))
		}
		size := binary.LittleEndian.Uint32(in)
		in = in[4:]
		if size == lz4LegacyMagic {
			continue
		}
		if int(size) > len(in) {
			return nil, fmt.Errorf("block of %d bytes, %d left", size, len(in))
		}
		var err error
		if out, err = unlz4Block(out, in[:size], lz4LegacyBlock); err != nil {
			return nil, err
		}
		in = in[size:]
	}
	return out, nil
}

// unlz4Block appends the decompression of one LZ4 block to out, at most
// limit bytes.
func unlz4Block(out, src []byte, limit int) ([]byte, error) {
	base := len(out)
	length := func(n int) (int, error) {
		if n != 15 {
			return n, nil
		}
		for {
			if len(src) == 0 {
				return 0, errors.New("truncated length")
			}
			b := src[0]
			src = src[1:]
			n += int(b)
			if b != 255 {
				return n, nil
			}
		}
	}
	for len(src) > 0 {
		token := src[0]
		src = src[1:]
		lit, err := length(int(token >> 4))
		if err != nil {
			return nil, err
		}
		if lit > len(src) {
			return nil, errors.New("literals run past the block")
		}
		out = append(out, src[:lit]...)
		src = src[lit:]
		if len(out)-base > limit {
			return nil, fmt.Errorf("block decompresses past %d bytes", limit)
		}
		if len(src) == 0 {
			break // the last sequence has literals only
		}
		if len(src) < 2 {
			return nil, errors.New("truncated match offset")
		}
		dist := int(binary.LittleEndian.Uint16(src))
		src = src[2:]
		m, err := length(int(token & 15))
		if err != nil {
			return nil, err
		}
		m += 4
		if dist == 0 || dist > len(out)-base {
			return nil, fmt.Errorf("match offset %d outside the block's %d bytes", dist, len(out)-base)
		}
		// Byte by byte: a match may overlap what it copies.
		for p := len(out) - dist; m > 0; m, p = m-1, p+1 {
			out = append(out, out[p])
		}
		if len(out)-base > limit {
			return nil, fmt.Errorf("block decompresses past %d bytes", limit)
		}
	}
	return out, nil
}

// checkPVH says whether k is an x86-64 ELF kernel with a PVH entry point.
func checkPVH(k []byte) error {
	f, err := elf.NewFile(bytes.NewReader(k))
	if err != nil {
		return fmt.Errorf("the decompressed kernel is not ELF: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("the kernel is for %v, not x86-64", f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return fmt.Errorf("read the kernel's notes: %w", err)
		}
		for len(b) >= 12 {
			nameSz, descSz, typ := binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
			nameEnd := 12 + int(nameSz+3)&^3
			end := nameEnd + int(descSz+3)&^3
			if end > len(b) || nameSz == 0 {
				break
			}
			if typ == xenPHYS32Entry && string(b[12:12+nameSz-1]) == "Xen" {
				return nil
			}
			b = b[end:]
		}
	}
	return errors.New("the kernel has no PVH entry point (XEN_ELFNOTE_PHYS32_ENTRY; CONFIG_PVH)")
}
