package raw

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// sinceData is how long ago c last received data, as the kernel counts
// it (TCP_INFO's tcpi_last_data_recv, in milliseconds, from the
// connection's start when nothing came yet). A connection is spliced
// by the kernel without its bytes crossing the relay, so the relay
// asks the kernel rather than counting reads: data received on the
// client's socket is the client sending, on the guest's the guest.
func sinceData(c *net.TCPConn) (time.Duration, bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var serr error
	if err := rc.Control(func(fd uintptr) {
		info, serr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || serr != nil {
		return 0, false
	}
	return time.Duration(info.Last_data_recv) * time.Millisecond, true
}

// watchIdle ends a spliced connection once nothing crossed it either
// way for idle (nginx's stream proxy_timeout: "between two successive
// read or write operations on client or proxied server connection").
// It checks when the connection could first have gone idle, and again
// each time it finds traffic since, so an open connection costs one
// timer, not a goroutine or a look at every read. stop ends the watch;
// timedOut is called, once, when it trips.
func watchIdle(client, guest *net.TCPConn, idle time.Duration, timedOut func()) (stop func() bool) {
	var t *time.Timer
	check := func() {
		quiet := idle
		for _, c := range []*net.TCPConn{client, guest} {
			since, ok := sinceData(c)
			if !ok {
				return // closed meanwhile
			}
			quiet = min(quiet, since)
		}
		if quiet >= idle {
			timedOut()
			return
		}
		t.Reset(idle - quiet)
	}
	t = time.AfterFunc(time.Hour, check)
	t.Reset(idle) // t is set before check can run
	return t.Stop
}
