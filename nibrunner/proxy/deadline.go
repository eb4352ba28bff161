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
type timedConn struct {
	net.Conn
	// readIdle, when set, is each read's deadline (while a body is read);
	// otherwise the caller's SetReadDeadline stands. writeIdle is each
	// write's.
	readIdle, writeIdle time.Duration
	// p is told of a read or write deadline that passed, once.
	p       *Proxy
	tripped bool
}

func (c *timedConn) Read(b []byte) (int, error) {
	if c.readIdle <= 0 {
		return c.Conn.Read(b)
	}
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.readIdle))
	n, err := c.Conn.Read(b)
	if err != nil && isTimeout(err) {
		c.trip(limitBodyTimeout)
	}
	return n, err
}

func (c *timedConn) Write(b []byte) (int, error) {
	if c.writeIdle > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.writeIdle))
	}
	n, err := c.Conn.Write(b)
	if err != nil && c.writeIdle > 0 && isTimeout(err) {
		c.trip(limitSendTimeout)
		// What the client did not take is dropped with the connection
		// (nginx's reset_timedout_connection): closed gracefully, the
		// kernel would hold it and its unsent answer for a client that
		// does not read.
		if tc := tcpOf(c.Conn); tc != nil {
			_ = tc.SetLinger(0)
		}
	}
	return n, err
}

// tcpOf is the TCP connection under c (through TLS and the caps'
// counting), nil when there is none.
func tcpOf(c net.Conn) *net.TCPConn {
	for {
		switch v := c.(type) {
		case *net.TCPConn:
			return v
		case *tls.Conn:
			c = v.NetConn()
		case *countedConn:
			c = v.Conn
		default:
			return nil
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
