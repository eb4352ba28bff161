// Command epollproxy is a measuring instrument, not part of nibrunnerd:
// the smallest HTTP/1.1 keep-alive reverse proxy a Go program can be when
// it reads a socket only once epoll says it is readable, all on one
// locked OS thread, as nginx's worker does. bench/proxy-vs-nginx.sh runs
// it (EPOLL_PROXY=1) beside nibrunnerd's proxy and nginx, to tell whether
// an epoll-driven HTTP/1 path would shorten nibrunnerd's tail
// (docs/bench.md, "Who owns the CPU decides the tail" and "The loop").
// nibrunnerd's proxy is such a loop now (nibrunner/proxy/loop.go).
//
// It passes each client's requests as they came to one backend, over a
// connection of that client's own, and passes back answers framed by
// Content-Length. It does no routing and no header rewriting, and keeps no
// log; a request with a body, or an answer framed any other way, closes
// the connection.
//
// Usage: epollproxy -listen 127.0.0.1:PORT -backend 127.0.0.1:PORT
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// conn is one client connection and its own connection to the backend.
type conn struct {
	fd, up  int
	in      []byte // the client's bytes not yet sent on
	head    []byte // the answer's head, until it is whole
	left    int    // answer body bytes still to come; -1 before the head
	waiting bool   // a request is with the backend
	out     []byte // bytes for the client its socket did not take yet
}

type loop struct {
	ep      int
	backend unix.Sockaddr
	clients map[int]*conn
	ups     map[int]*conn
	rbuf    [16 << 10]byte
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9000", "address to listen on")
	backend := flag.String("backend", "", "the backend's address")
	flag.Parse()
	if err := run(*listen, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "epollproxy:", err)
		os.Exit(1)
	}
}

func sockaddr(s string) (unix.Sockaddr, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil || !ap.Addr().Is4() {
		return nil, fmt.Errorf("%q is not an IPv4 address with a port", s)
	}
	return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, nil
}

func run(listen, backend string) error {
	runtime.LockOSThread()
	lsa, err := sockaddr(listen)
	if err != nil {
		return fmt.Errorf("-listen: %w", err)
	}
	bsa, err := sockaddr(backend)
	if err != nil {
		return fmt.Errorf("-backend: %w", err)
	}
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_ = unix.SetsockoptInt(lfd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err := unix.Bind(lfd, lsa); err != nil {
		return fmt.Errorf("bind %s: %w", listen, err)
	}
	if err := unix.Listen(lfd, 4096); err != nil {
		return err
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, lfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(lfd)}); err != nil {
		return err
	}
	l := &loop{ep: ep, backend: bsa, clients: map[int]*conn{}, ups: map[int]*conn{}}
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(ep, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		for _, ev := range events[:n] {
			fd := int(ev.Fd)
			switch {
			case fd == lfd:
				l.accept(lfd)
			case l.clients[fd] != nil:
				c := l.clients[fd]
				if ev.Events&unix.EPOLLOUT != 0 && len(c.out) > 0 && !l.flush(c) {
					continue
				}
				if ev.Events&unix.EPOLLIN != 0 || ev.Events&(unix.EPOLLHUP|unix.EPOLLERR|unix.EPOLLRDHUP) != 0 {
					l.fromClient(c)
				}
			case l.ups[fd] != nil:
				l.fromBackend(l.ups[fd])
			}
		}
	}
}

func (l *loop) accept(lfd int) {
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		if err != nil {
			return // EAGAIN: all taken; anything else: the next event retries
		}
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		c := &conn{fd: fd, left: -1}
		if unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(fd)}) != nil {
			unix.Close(fd)
			continue
		}
		l.clients[fd] = c
	}
}

func (l *loop) close(c *conn) {
	unix.Close(c.fd)
	delete(l.clients, c.fd)
	if c.up > 0 {
		unix.Close(c.up)
		delete(l.ups, c.up)
	}
}

// fromClient reads what the client sent and sends a whole request head
// on, unless one is already with the backend.
func (l *loop) fromClient(c *conn) {
	for {
		if !c.waiting {
			if i := bytes.Index(c.in, []byte("\r\n\r\n")); i >= 0 {
				l.send(c, i+4)
				return
			}
		}
		n, err := unix.Read(c.fd, l.rbuf[:])
		if n <= 0 {
			if !errors.Is(err, unix.EAGAIN) {
				l.close(c) // the client is gone
			}
			return
		}
		c.in = append(c.in, l.rbuf[:n]...)
		if n < len(l.rbuf) && c.waiting {
			return // edge-triggered: anything later raises a new event
		}
	}
}

// send passes the request head c.in[:n] to the backend.
func (l *loop) send(c *conn, n int) {
	req := c.in[:n]
	if _, ok := field(req, "content-length"); ok {
		l.close(c) // bodies are beyond this instrument
		return
	}
	if _, ok := field(req, "transfer-encoding"); ok {
		l.close(c) // bodies are beyond this instrument
		return
	}
	if c.up == 0 {
		up, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			l.close(c)
			return
		}
		if err := unix.Connect(up, l.backend); err != nil { // blocking, once per client
			unix.Close(up)
			l.close(c)
			return
		}
		_ = unix.SetNonblock(up, true)
		_ = unix.SetsockoptInt(up, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
		if unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, up, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(up)}) != nil {
			unix.Close(up)
			l.close(c)
			return
		}
		c.up = up
		l.ups[up] = c
	}
	if w, err := unix.Write(c.up, req); err != nil || w < len(req) {
		l.close(c) // a head the backend's socket cannot take whole
		return
	}
	c.in = append(c.in[:0], c.in[n:]...)
	c.waiting, c.left, c.head = true, -1, c.head[:0]
}

// fromBackend passes the backend's answer to the client as it comes.
func (l *loop) fromBackend(c *conn) {
	for {
		n, err := unix.Read(c.up, l.rbuf[:])
		if n <= 0 {
			if !errors.Is(err, unix.EAGAIN) {
				l.close(c)
			}
			return
		}
		data := l.rbuf[:n]
		if c.left < 0 {
			c.head = append(c.head, data...)
			i := bytes.Index(c.head, []byte("\r\n\r\n"))
			if i < 0 {
				continue
			}
			length, ok := contentLength(c.head[:i])
			if !ok {
				l.close(c)
				return
			}
			c.left = length - (len(c.head) - (i + 4))
			data = c.head
		} else {
			c.left -= n
		}
		if !l.write(c, data) {
			return
		}
		if c.left <= 0 {
			c.waiting = false
			l.fromClient(c) // a request that came meanwhile
			if l.clients[c.fd] != c {
				return
			}
		}
		if n < len(l.rbuf) {
			return
		}
	}
}

// write sends b to the client, keeping what its socket does not take.
func (l *loop) write(c *conn, b []byte) bool {
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return true
	}
	w, err := unix.Write(c.fd, b)
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		l.close(c)
		return false
	}
	if w = max(w, 0); w < len(b) {
		c.out = append(c.out, b[w:]...)
	}
	return true
}

// flush sends what the client's socket did not take before.
func (l *loop) flush(c *conn) bool {
	w, err := unix.Write(c.fd, c.out)
	if err != nil && !errors.Is(err, unix.EAGAIN) {
		l.close(c)
		return false
	}
	c.out = append(c.out[:0], c.out[max(w, 0):]...)
	return true
}

// contentLength reads the Content-Length of an answer's head; false for
// an answer framed otherwise.
func contentLength(h []byte) (int, bool) {
	if _, chunked := field(h, "transfer-encoding"); chunked {
		return 0, false
	}
	v, ok := field(h, "content-length")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(string(v))
	return n, err == nil && n >= 0
}

// field finds the header field name (lower case) in the head h and
// returns its value, trimmed.
func field(h []byte, name string) ([]byte, bool) {
	for line := range bytes.Lines(h) {
		if len(line) > len(name) && line[len(name)] == ':' && bytes.EqualFold(line[:len(name)], []byte(name)) {
			return bytes.TrimSpace(line[len(name)+1:]), true
		}
	}
	return nil, false
}
