package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// loopConn is a TCP connection whose descriptor a loop waits on: a
// net.Conn for straight-line code running as one of the loop's tasks.
// A read or write that would wait hands the loop back until epoll says
// the socket is ready or the deadline passes. Once detached (the task
// left the loop) it is a runtime-polled connection like any other.
//
// Only its task (or, while it is idle in a pool, the pool's taker) reads,
// writes and sets deadlines; Close may come from any goroutine.
type loopConn struct {
	l        *loop
	fd       int
	idx, gen uint32
	task     *task // the task it serves now (nil in a pool)

	// rready and wready: the socket may have bytes (room) — set by the
	// loop on epoll's edges, cleared by a read (write) that found none.
	// rready is atomic for bconn.quiet, which may ask an
	// idle pooled connection from anywhere.
	rready atomic.Bool
	wready bool
	// eof: epoll reported the peer's close (EPOLLRDHUP, EPOLLHUP or
	// EPOLLERR). Its edge comes once, and may come before a read that
	// finds data ahead of it, so a short read clears rready only while it
	// is false, as nginx's pending_eof (nginx/nginx src/os/unix/ngx_recv.c
	// at aa6936e6): otherwise a body framed by the close would wait for an
	// edge that already came.
	eof          bool
	rdl, wdl     time.Time // deadlines (zero: none)
	laddr, raddr net.Addr

	closed atomic.Bool // Close was called
	queued atomic.Bool // the descriptor is queued for the loop to close
	gc     atomic.Pointer[goConn]
}

// loopEmptyReads counts the reads that found their socket empty (a test
// proves the loop's claim by it).
var loopEmptyReads atomic.Int64

// goConn is a detached loopConn's runtime-polled connection.
type goConn struct{ net.Conn }

// adopt takes c's socket from the runtime's poller for a loop: the
// descriptor is duplicated and c closed. The loop registers it when its
// task starts (loop.add).
func adopt(c net.Conn) (*loopConn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, fmt.Errorf("a %T is not a TCP connection", c)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("fcntl", derr)
	}
	lc := &loopConn{fd: fd, laddr: c.LocalAddr(), raddr: c.RemoteAddr(), wready: true}
	lc.rready.Store(true)
	_ = c.Close()
	return lc, nil
}

// lcOf is the loopConn under c (through TLS and the caps' counting), if
// any.
func lcOf(c net.Conn) *loopConn {
	lc, _ := under(c).(*loopConn)
	return lc
}

func (c *loopConn) opErr(op string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, net.ErrClosed) {
		return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: err}
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.laddr, Addr: c.raddr, Err: os.NewSyscallError(op, err)}
}

func (c *loopConn) Read(b []byte) (int, error) {
	if g := c.gc.Load(); g != nil {
		return g.Read(b)
	}
	if len(b) == 0 {
		return 0, nil // as net.Conn does: nothing asked, nothing waited for
	}
	for {
		if c.closed.Load() {
			return 0, c.opErr("read", net.ErrClosed)
		}
		if c.rready.Load() {
			n, err := rawRead(c.fd, b)
			switch {
			case n > 0:
				if n < len(b) {
					// Likely all there was: the next read waits for epoll's
					// word instead of finding the socket empty.
					c.drained()
				}
				if c.task != nil && !c.task.left {
					c.task.didIO()
				}
				return n, nil
			case err == nil:
				return 0, io.EOF
			case err == unix.EINTR:
				continue
			case err != unix.EAGAIN:
				return 0, c.opErr("read", err)
			}
			loopEmptyReads.Add(1)
			c.rready.Store(false)
		}
		if err := c.waitFor(false, c.rdl); err != nil {
			return 0, c.opErr("read", err)
		}
	}
}

func (c *loopConn) Write(b []byte) (int, error) {
	if g := c.gc.Load(); g != nil {
		return g.Write(b)
	}
	done := 0
	for done < len(b) {
		if c.closed.Load() {
			return done, c.opErr("write", net.ErrClosed)
		}
		if c.wready {
			n, err := rawWrite(c.fd, b[done:])
			switch {
			case n > 0:
				if done += n; done < len(b) {
					c.wready = false
				}
				if c.task != nil && !c.task.left {
					c.task.didIO()
				}
				continue
			case err == unix.EINTR:
				continue
			case err != unix.EAGAIN && err != nil:
				return done, c.opErr("write", err)
			}
			c.wready = false
		}
		if err := c.waitFor(true, c.wdl); err != nil {
			return done, c.opErr("write", err)
		}
	}
	return done, nil
}

// drained notes that a short read took all the socket had, unless its
// peer's close is still to be read.
func (c *loopConn) drained() {
	if !c.eof {
		c.rready.Store(false)
	}
}

// quiet reports whether the loop knows the socket to have had nothing
// to read since its last read: no edge since it. Bytes that came after
// the loop's last epoll_wait are not known yet, as they are not to
// nginx, which takes a cached upstream connection on the same word
// (nginx/nginx src/http/modules/ngx_http_upstream_keepalive_module.c at
// 403a9efc: the connection is asked only when it goes back to the cache
// with its read event ready, and taken out unasked).
func (c *loopConn) quiet() bool {
	return !c.rready.Load()
}

// rawRead and rawWrite are read(2) and write(2) without telling the
// runtime's scheduler: on a non-blocking socket they never wait, and the
// loop wants its P kept, not handed to another thread while the kernel
// copies, and each entersyscall and exitsyscall costs time of its own.
func rawRead(fd int, b []byte) (int, error)  { return rawIO(unix.SYS_READ, fd, b) }
func rawWrite(fd int, b []byte) (int, error) { return rawIO(unix.SYS_WRITE, fd, b) }

func rawIO(trap uintptr, fd int, b []byte) (int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(p), uintptr(len(b)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}

// clock is the time for c's deadlines: its loop's (loop.now) while a
// task of the loop uses c, the wall clock's otherwise.
func (c *loopConn) clock() time.Time {
	if c != nil && c.task != nil && !c.task.left {
		return c.l.now
	}
	return time.Now()
}

// waitFor waits for the socket's readiness to read (write, with out)
// until deadline.
func (c *loopConn) waitFor(out bool, deadline time.Time) error {
	if !deadline.IsZero() && !c.clock().Before(deadline) {
		return os.ErrDeadlineExceeded
	}
	if c.task == nil || c.task.left {
		return errors.New("a loop connection used outside its loop") // a bug: never a task's wait
	}
	if !c.task.wait(c, out, deadline) {
		return os.ErrDeadlineExceeded
	}
	if c.closed.Load() {
		return net.ErrClosed
	}
	return nil
}

// Close closes the connection; from another goroutine than its task's,
// it also ends the task's wait on it.
func (c *loopConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		if g := c.gc.Load(); g != nil {
			return g.Close()
		}
		return nil
	}
	if g := c.gc.Load(); g != nil {
		return g.Close()
	}
	c.queueClose()
	return nil
}

// queueClose has the loop close the descriptor (once), between tasks:
// the descriptor is never closed while a task may be using it.
func (c *loopConn) queueClose() {
	if c.l == nil {
		// Never registered with a loop (its task never started).
		if c.queued.CompareAndSwap(false, true) {
			unix.Close(c.fd)
		}
		return
	}
	if !c.queued.CompareAndSwap(false, true) {
		return
	}
	c.l.mu.Lock()
	if c.l.done {
		// The loop is gone (an idle pooled connection closed after its
		// server stopped): nothing else can use the descriptor.
		c.l.mu.Unlock()
		unix.Close(c.fd)
		return
	}
	c.l.closing = append(c.l.closing, c)
	c.l.kick()
	c.l.mu.Unlock()
}

// detach makes c a runtime-polled connection, for a task leaving its
// loop; its descriptor in the loop is closed.
func (c *loopConn) detach() {
	if c.gc.Load() != nil || c.closed.Load() {
		return
	}
	fd, err := unix.FcntlInt(uintptr(c.fd), unix.F_DUPFD_CLOEXEC, 0)
	var g net.Conn
	if err == nil {
		f := os.NewFile(uintptr(fd), "")
		g, err = net.FileConn(f)
		f.Close()
	}
	if err != nil {
		// No descriptor to spare: the connection ends.
		c.Close()
		return
	}
	_ = g.SetReadDeadline(c.rdl)
	_ = g.SetWriteDeadline(c.wdl)
	c.gc.Store(&goConn{g})
	c.queueClose()
	if c.closed.Load() {
		g.Close() // closed meanwhile, from elsewhere
	}
}

func (c *loopConn) LocalAddr() net.Addr  { return c.laddr }
func (c *loopConn) RemoteAddr() net.Addr { return c.raddr }

func (c *loopConn) SetDeadline(t time.Time) error {
	if g := c.gc.Load(); g != nil {
		return g.SetDeadline(t)
	}
	c.rdl, c.wdl = t, t
	return nil
}

func (c *loopConn) SetReadDeadline(t time.Time) error {
	if g := c.gc.Load(); g != nil {
		return g.SetReadDeadline(t)
	}
	c.rdl = t
	return nil
}

func (c *loopConn) SetWriteDeadline(t time.Time) error {
	if g := c.gc.Load(); g != nil {
		return g.SetWriteDeadline(t)
	}
	c.wdl = t
	return nil
}

// SetLinger is net.TCPConn's: 0 resets the connection at Close.
func (c *loopConn) SetLinger(sec int) error {
	if g := c.gc.Load(); g != nil {
		if tc, ok := g.Conn.(*net.TCPConn); ok {
			return tc.SetLinger(sec)
		}
		return nil
	}
	return unix.SetsockoptLinger(c.fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: int32(sec)})
}

// CloseWrite is net.TCPConn's.
func (c *loopConn) CloseWrite() error {
	if g := c.gc.Load(); g != nil {
		if cw, ok := g.Conn.(interface{ CloseWrite() error }); ok {
			return cw.CloseWrite()
		}
		return nil
	}
	return unix.Shutdown(c.fd, unix.SHUT_WR)
}

// dial connects to addr for the task running now, waiting at most
// timeout, the way net.Dialer does (TCP_NODELAY, keep-alive probes after
// 30 s), without blocking the loop.
func (l *loop) dial(addr string, timeout time.Duration) (*loopConn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("%q is not an IP address and port", addr)}
	}
	raddr := net.TCPAddrFromAddrPort(ap)
	fail := func(call string, err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: os.NewSyscallError(call, err)}
	}
	family := unix.AF_INET
	var sa unix.Sockaddr
	if a := ap.Addr().Unmap(); a.Is4() {
		sa = &unix.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
	} else {
		family = unix.AF_INET6
		sa = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
	}
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fail("socket", err)
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 30)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 30)
	c := &loopConn{l: l, fd: fd, raddr: raddr, task: l.cur}
	c.rready.Store(true)
	if err := l.add(c); err != nil {
		unix.Close(fd)
		return nil, fail("epoll_ctl", err)
	}
	err = unix.Connect(fd, sa)
	for err == unix.EINTR {
		err = unix.Connect(fd, sa)
	}
	if err != nil && err != unix.EINPROGRESS {
		c.Close()
		return nil, fail("connect", err)
	}
	if err == unix.EINPROGRESS {
		deadline := c.clock().Add(timeout)
		for !c.wready {
			if c.task == nil || !c.task.wait(c, true, deadline) {
				c.Close()
				return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: raddr, Err: os.ErrDeadlineExceeded}
			}
		}
		if soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
			c.Close()
			if err == nil {
				err = unix.Errno(soerr)
			}
			return nil, fail("connect", err)
		}
	}
	c.wready = true
	if sa, err := unix.Getsockname(fd); err == nil {
		switch a := sa.(type) {
		case *unix.SockaddrInet4:
			c.laddr = &net.TCPAddr{IP: a.Addr[:], Port: a.Port}
		case *unix.SockaddrInet6:
			c.laddr = &net.TCPAddr{IP: a.Addr[:], Port: a.Port}
		}
	}
	return c, nil
}
