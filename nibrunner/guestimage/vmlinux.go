package guestimage

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// The guest boots the kernel's ELF image (vmlinux) through its PVH entry
// point: QEMU maps an ELF kernel from its file, a page-cache copy every
// guest shares, where it reads a bzImage into memory of its own and keeps
// it for the guest's lifetime. The guest also skips the decompression.

// xenPHYS32Entry is the ELF note (owner "Xen") that gives the 32-bit PVH
// entry point QEMU boots an ELF kernel through (XEN_ELFNOTE_PHYS32_ENTRY).
const xenPHYS32Entry = 18

// checkPVH says whether k is an x86-64 ELF kernel with a PVH entry point.
func checkPVH(k []byte) error {
	f, err := elf.NewFile(bytes.NewReader(k))
	if err != nil {
		return fmt.Errorf("the kernel is not ELF: %w", err)
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
