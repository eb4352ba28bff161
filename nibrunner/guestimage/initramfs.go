package guestimage

import "bytes"

// InitramfsOf is an initramfs holding only init (as /init), /dev/console
// and the folders a kernel's pseudo-filesystems mount on: for a test that
// runs a program of its own as a guest kernel's PID 1 (the jail's cgroup
// v2 test does, on a kernel whose cgroups are v2).
func InitramfsOf(init []byte) ([]byte, error) {
	var buf bytes.Buffer
	c := newCpioWriter(&buf)
	for _, d := range []string{"dev", "proc", "sys", "tmp"} {
		c.Dir(d, 0o755)
	}
	c.CharDev("dev/console", 0o600, 5, 1)
	c.File("init", 0o755, init)
	if err := c.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
