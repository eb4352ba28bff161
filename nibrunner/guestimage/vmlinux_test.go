package guestimage

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// elfKernel is a minimal x86-64 ELF with one loadable segment of body and,
// when pvh, the Xen note that gives a PVH entry point.
func elfKernel(body []byte, pvh bool) []byte {
	var note bytes.Buffer
	le := binary.LittleEndian
	typ := uint32(xenPHYS32Entry)
	if !pvh {
		typ = 1 // another Xen note
	}
	_ = binary.Write(&note, le, [3]uint32{4, 4, typ})
	note.WriteString("Xen\x00")
	_ = binary.Write(&note, le, uint32(0x1000000))
	const ehSize, phSize = 64, 56
	noteOff := uint64(ehSize + 2*phSize)
	bodyOff := noteOff + uint64(note.Len())
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0})
	b.Write(make([]byte, 8))
	_ = binary.Write(&b, le, struct {
		Type, Machine              uint16
		Version                    uint32
		Entry, Phoff, Shoff        uint64
		Flags                      uint32
		Ehsize, Phentsize, Phnum   uint16
		Shentsize, Shnum, Shstrndx uint16
	}{2, 62, 1, 0x1000000, ehSize, 0, 0, ehSize, phSize, 2, 64, 0, 0})
	prog := func(typ uint32, off, size uint64) {
		_ = binary.Write(&b, le, struct {
			Type, Flags                          uint32
			Off, Vaddr, Paddr, Filesz, Memsz, Al uint64
		}{typ, 5, off, 0x1000000, 0x1000000, size, size, 4})
	}
	prog(4, noteOff, uint64(note.Len())) // PT_NOTE
	prog(1, bodyOff, uint64(len(body)))  // PT_LOAD
	b.Write(note.Bytes())
	b.Write(body)
	return b.Bytes()
}

// lz4Literals is an LZ4 block holding p as literals only.
func lz4Literals(p []byte) []byte {
	n := len(p)
	out := []byte{0xf0}
	if n < 15 {
		out[0] = byte(n << 4)
	} else {
		for n -= 15; n >= 255; n -= 255 {
			out = append(out, 255)
		}
		out = append(out, byte(n))
	}
	return append(out, p...)
}

// bzImage wraps payload as the kernel build does: 4 setup sectors and a
// boot sector, the boot header, the payload after some code.
func bzImage(payload []byte) []byte {
	le := binary.LittleEndian
	const pm, code = 5 * 512, 0x300
	b := make([]byte, pm+code+len(payload)+512)
	b[bootSetupSects] = 4
	copy(b[bootHeaderMagic:], "HdrS")
	le.PutUint16(b[bootVersion:], 0x20f)
	le.PutUint32(b[bootPayloadOffset:], code)
	le.PutUint32(b[bootPayloadLength:], uint32(len(payload)))
	copy(b[pm+code:], payload)
	return b
}

// lz4Legacy is elf in LZ4's legacy format in two blocks (the second
// after a repeated magic, as concatenated streams are), with the size the
// kernel build appends.
func lz4Legacy(elf []byte) []byte {
	le := binary.LittleEndian
	var p []byte
	p = le.AppendUint32(p, lz4LegacyMagic)
	half := len(elf) / 2
	for i, part := range [][]byte{elf[:half], elf[half:]} {
		if i == 1 {
			p = le.AppendUint32(p, lz4LegacyMagic)
		}
		blk := lz4Literals(part)
		p = le.AppendUint32(p, uint32(len(blk)))
		p = append(p, blk...)
	}
	return le.AppendUint32(p, uint32(len(elf)))
}

func TestTheELFKernelIsTakenOutOfAnLZ4BzImage(t *testing.T) {
	elf := elfKernel(bytes.Repeat([]byte("kernel text "), 100), true)
	got, err := extractVmlinux(bzImage(lz4Legacy(elf)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, elf) {
		t.Errorf("extracted %d bytes, not the %d-byte ELF that was packed", len(got), len(elf))
	}
}

func TestAKernelQEMUCannotBootAsELFIsRefusedSayingWhy(t *testing.T) {
	elf := elfKernel([]byte("text"), true)
	gz := append([]byte{0x1f, 0x8b, 8, 0}, make([]byte, 16)...)
	short := lz4Legacy(elf)
	binary.LittleEndian.PutUint32(short[len(short)-4:], uint32(len(elf)+1))
	for _, c := range []struct {
		name, want string
		bz         []byte
	}{
		{"not a bzImage", "HdrS", make([]byte, 4096)},
		{"gzip payload", "not LZ4", bzImage(gz)},
		{"no PVH note", "no PVH entry point", bzImage(lz4Legacy(elfKernel([]byte("text"), false)))},
		{"size trailer disagrees", "says", bzImage(short)},
		{"not ELF inside", "not ELF", bzImage(lz4Legacy([]byte("MZ not an ELF file at all")))},
	} {
		_, err := extractVmlinux(c.bz)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestAnLZ4MatchMayOverlapWhatItCopies(t *testing.T) {
	// "abc", then 9 bytes from 3 back (overlapping), then "X".
	blk := []byte{0x35, 'a', 'b', 'c', 3, 0, 0x10, 'X'}
	got, err := unlz4Block(nil, blk, 64)
	if err != nil || string(got) != "abcabcabcabcX" {
		t.Errorf("got %q, %v", got, err)
	}
	for _, bad := range [][]byte{
		{0x30, 'a', 'b', 'c', 9, 0, 0x10, 'X'}, // offset past the start
		{0x30, 'a', 'b', 'c', 0, 0},            // offset 0
		{0x50, 'a'},                            // literals past the end
	} {
		if _, err := unlz4Block(nil, bad, 64); err == nil {
			t.Errorf("block % x decompressed", bad)
		}
	}
	if _, err := unlz4Block(nil, blk, 8); err == nil {
		t.Error("a block past its limit decompressed")
	}
}
