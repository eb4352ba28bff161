package daemon

import (
	"context"
	"net"
	"testing"
	"time"
)

func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return ln.Addr().String()
}

func TestATCPProbePassesWhenSomethingListensAndHoldsTheConnection(t *testing.T) {
	addr := listen(t, func(c net.Conn) { time.Sleep(time.Second); c.Close() })
	if !tcpAnswers(context.Background(), addr) {
		t.Fatal("a listener holding the connection open failed the probe")
	}
}

func TestATCPProbePassesForAServerThatGreetsFirst(t *testing.T) {
	addr := listen(t, func(c net.Conn) { c.Write([]byte("220 hello\r\n")); time.Sleep(time.Second); c.Close() })
	if !tcpAnswers(context.Background(), addr) {
		t.Fatal("a server sending a banner failed the probe")
	}
}

// QEMU's user-mode network accepts on the host port and resets the
// connection when nothing listens in the guest.
func TestATCPProbeFailsWhenAForwarderAcceptsAndResets(t *testing.T) {
	addr := listen(t, func(c net.Conn) {
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	if tcpAnswers(context.Background(), addr) {
		t.Fatal("an accept followed by a reset passed the probe")
	}
}

func TestATCPProbeFailsWhenNothingListens(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if tcpAnswers(context.Background(), addr) {
		t.Fatal("a closed port passed the probe")
	}
}
