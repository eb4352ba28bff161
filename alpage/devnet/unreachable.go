package devnet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Outage is how an unreachable node's endpoint fails. Either way the
// endpoint is a port on loopback: an unreachable node never keeps an
// address off the machine, so tests and demos send no packet out of it.
type Outage string

const (
	// Refuse: the port refuses every connection at once (a reset), as a
	// host that is up with nothing listening does.
	Refuse Outage = "refuse"
	// Blackhole: the port accepts every connection and never answers, as a
	// hung replica does; the reader waits for its own timeout.
	Blackhole Outage = "blackhole"
)

// Outages are the values a fleet file may give "unreachable".
var Outages = []Outage{Refuse, Blackhole}

// listenOutage opens the endpoint of an unreachable node, on the IPv6
// loopback like the reachable ones (127.0.0.1 on a host without IPv6).
func (d *Devnet) listenOutage(o Outage) (*net.TCPAddr, error) {
	switch o {
	case Refuse:
		addr, f, err := refusingPort()
		if err != nil {
			return nil, err
		}
		d.closers = append(d.closers, f.Close)
		return addr, nil
	case Blackhole:
		ln, err := listenLoopback()
		if err != nil {
			return nil, err
		}
		h := &blackhole{ln: ln}
		d.closers = append(d.closers, h.Close)
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			h.hold()
		}()
		return ln.Addr().(*net.TCPAddr), nil
	}
	return nil, fmt.Errorf("unknown outage %q", o)
}

// listenLoopback listens on [::1]:0, else 127.0.0.1:0.
func listenLoopback() (net.Listener, error) {
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		return ln, nil
	}
	return net.Listen("tcp", "127.0.0.1:0")
}

// refusingPort binds a TCP port on loopback and never listens on it: the
// kernel answers each connection attempt with a reset (connection
// refused), and while the socket is held no other listener, and no
// outgoing connection, can take the port. A port merely closed after
// listening would be free for anyone to reuse.
func refusingPort() (*net.TCPAddr, *os.File, error) {
	var errs []error
	for _, a := range []struct {
		family int
		sa     unix.Sockaddr
	}{
		{unix.AF_INET6, &unix.SockaddrInet6{Addr: [16]byte{15: 1}}},
		{unix.AF_INET, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}},
	} {
		fd, err := unix.Socket(a.family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := unix.Bind(fd, a.sa); err != nil {
			unix.Close(fd)
			errs = append(errs, err)
			continue
		}
		sa, err := unix.Getsockname(fd)
		if err != nil {
			unix.Close(fd)
			errs = append(errs, err)
			continue
		}
		f := os.NewFile(uintptr(fd), "refusing port")
		switch sa := sa.(type) {
		case *unix.SockaddrInet6:
			return &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}, f, nil
		case *unix.SockaddrInet4:
			return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}, f, nil
		}
		f.Close()
	}
	return nil, nil, fmt.Errorf("bind a refusing port on loopback: %w", errors.Join(errs...))
}

// blackhole accepts connections and holds them, reading and writing
// nothing, until Close.
type blackhole struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func (b *blackhole) hold() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.done {
			c.Close()
		} else {
			b.conns = append(b.conns, c)
		}
		b.mu.Unlock()
	}
}

// Close stops accepting and drops every held connection.
func (b *blackhole) Close() error {
	err := b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done = true
	for _, c := range b.conns {
		c.Close()
	}
	b.conns = nil
	return err
}
