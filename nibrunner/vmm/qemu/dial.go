package qemu

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/sys/unix"

	"alpnib.dev/nibrunner/perm"
)

// dialSocket connects to the unix socket at path, which is in the folder
// the guest's uid owns (vm/): connect(2) by path follows a link planted in
// the socket's place (to the daemon's control socket, or any other of
// root's), so the socket is found as perm.Open finds things (no link
// but root's own, no step onto what the folder's owner does not own),
// checked to be a socket, and connected to through /proc/self/fd/N of
// that O_PATH descriptor, which names that very socket whatever its
// name names by then.
func dialSocket(ctx context.Context, path string) (net.Conn, error) {
	f, err := perm.Open(path, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fd := int(f.Fd())
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return nil, &perm.UnsafeError{Path: path, At: path, Reason: "is not a socket"}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", path, err)
	}
	return conn, nil
}
