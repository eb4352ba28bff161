package proxy

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"time"
)

// timedConn is a client connection whose reads and writes each get a
// deadline measured from when they begin, as nginx's client_body_timeout
// and send_timeout are: "between two successive read (write)
// operations", not for the whole transfer. A body trickled a byte a
// minute, or an answer the client never reads, ends after that long;
// one that keeps moving goes on as long as it takes.
//
// Setting a deadline costs about as much as the request's own write
// (the runtime's timer), so a deadline armed less than an eighth of the
// timeout ago stands: an operation waits at least 7/8 of the timeout,
// and at most all of it.
type timedConn struct {
	net.Conn
	// readIdle, when set, is each read's deadline (while a body is read);
	// otherwise the caller's SetReadDeadline stands. writeIdle is each
	// write's.
	readIdle, writeIdle time.Duration
	// headTimeout, when set (and readIdle is not), is armed as the read
	// deadline by the next read, which clears it: a request head's
	// deadline, armed only when the head needs bytes beyond those that
	// woke its connection, so a head that came whole costs no timer.
	headTimeout time.Duration
	// The deadlines armed now (zero: none).
	readAt, writeAt time.Time
	// p is told of a read or write deadline that passed, once.
	p       *Proxy
	tripped bool
	// lc is the loop connection under it, if a loop serves it: its clock
	// is the loop's.
	lc *loopConn
}

// SetReadDeadline and SetWriteDeadline set the connection's deadline and
// remember it, so that a read or write re-arms its own when due.
func (c *timedConn) SetReadDeadline(t time.Time) error {
	c.readAt = t
	return c.Conn.SetReadDeadline(t)
}

func (c *timedConn) SetWriteDeadline(t time.Time) error {
	c.writeAt = t
	return c.Conn.SetWriteDeadline(t)
}

// due is the deadline an operation beginning now needs, and whether the
// one armed must move to it: it is none, later (another's, such as the
// head's), or short of it by more than an eighth of the timeout.
func due(now, armed time.Time, idle time.Duration) (time.Time, bool) {
	want := now.Add(idle)
	return want, armed.IsZero() || armed.After(want) || want.Sub(armed) > idle/8
}

func (c *timedConn) Read(b []byte) (int, error) {
	if c.readIdle <= 0 {
		if c.headTimeout > 0 {
			_ = c.SetReadDeadline(c.lc.clock().Add(c.headTimeout))
			c.headTimeout = 0
		}
		return c.Conn.Read(b)
	}
	if t, rearm := due(c.lc.clock(), c.readAt, c.readIdle); rearm {
		_ = c.SetReadDeadline(t)
	}
	n, err := c.Conn.Read(b)
	if err != nil && isTimeout(err) {
		c.trip(limitBodyTimeout)
	}
	return n, err
}

func (c *timedConn) Write(b []byte) (int, error) {
	if c.writeIdle > 0 {
		if t, rearm := due(c.lc.clock(), c.writeAt, c.writeIdle); rearm {
			_ = c.SetWriteDeadline(t)
		}
	}
	n, err := c.Conn.Write(b)
	if err != nil && c.writeIdle > 0 && isTimeout(err) {
		c.trip(limitSendTimeout)
		// What the client did not take is dropped with the connection
		// (nginx's reset_timedout_connection): closed gracefully, the
		// kernel would hold it and its unsent answer for a client that
		// does not read.
		if l, ok := under(c.Conn).(interface{ SetLinger(int) error }); ok {
			_ = l.SetLinger(0)
		}
	}
	return n, err
}

// under is the connection under c's TLS and the caps' counting: a
// *net.TCPConn, or a loop's *loopConn.
func under(c net.Conn) net.Conn {
	for {
		switch v := c.(type) {
		case *tls.Conn:
			c = v.NetConn()
		case *countedConn:
			c = v.Conn
		default:
			return c
		}
	}
}

func (c *timedConn) trip(limit string) {
	if !c.tripped && c.p != nil {
		c.tripped = true
		c.p.tripped(limit)
	}
}

// isTimeout reports whether err is a deadline that passed.
func isTimeout(err error) bool {
	return errors.Is(err, os.ErrDeadlineExceeded)
}
