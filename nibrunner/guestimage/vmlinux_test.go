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

func TestAKernelQEMUCannotBootThroughPVHIsRefusedSayingWhy(t *testing.T) {
	if err := checkPVH(elfKernel([]byte("text"), true)); err != nil {
		t.Errorf("a kernel with the PVH note: %v", err)
	}
	for _, c := range []struct {
		name, want string
		k          []byte
	}{
		{"no PVH note", "no PVH entry point", elfKernel([]byte("text"), false)},
		{"not ELF", "not ELF", []byte("MZ not an ELF file at all")},
	} {
		if err := checkPVH(c.k); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}
