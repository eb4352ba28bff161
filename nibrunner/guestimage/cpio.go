package guestimage

import (
	"fmt"
	"io"
)

// cpioWriter writes the SVR4 "newc" cpio format the kernel unpacks an
// initramfs from. Every entry gets mtime 0 and owner root so that the same
// inputs always give the same bytes (and so the same image version).
type cpioWriter struct {
	w   io.Writer
	ino uint32
	off int64
	err error
}

func newCpioWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: w} }

// File modes as the cpio header carries them (the S_IF* bits).
const (
	cpioDir  = 0o040000
	cpioReg  = 0o100000
	cpioChar = 0o020000
)

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// entry writes one header, the name and the data.
func (c *cpioWriter) entry(name string, mode uint32, rdevMajor, rdevMinor uint32, data []byte) {
	c.ino++
	nlink := uint32(1)
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, rdevMajor, rdevMinor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write(append([]byte(name), 0))
	c.pad()
	c.write(data)
	c.pad()
}

// Dir adds a directory.
func (c *cpioWriter) Dir(name string, perm uint32) { c.entry(name, cpioDir|perm, 0, 0, nil) }

// File adds a regular file.
func (c *cpioWriter) File(name string, perm uint32, data []byte) {
	c.entry(name, cpioReg|perm, 0, 0, data)
}

// CharDev adds a character device node.
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) {
	c.entry(name, cpioChar|perm, major, minor, nil)
}

// Close writes the trailer entry and reports the first error.
func (c *cpioWriter) Close() error {
	c.ino = 0
	c.entry("TRAILER!!!", 0, 0, 0, nil)
	return c.err
}
