package testenv

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// InNetns runs f on an OS thread moved into the named network namespace
// (one `ip netns add` made); with name "" it runs f where the test runs. The thread is never handed back to the
// scheduler (the goroutine exits still locked, so Go retires the thread):
// nothing else ever runs in a namespace it did not ask for. Sockets made
// inside stay in the namespace after f returns.
func InNetns(name string, f func() error) error {
	if name == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", name, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", name, err)
			return
		}
		errc <- f()
	}()
	return <-errc
}

// IP runs ip(8) with args and fails the test when it fails.
func IP(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command(RequireCommand(t, "ip"), args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Netns makes a network namespace with its loopback up, deleted when the
// test ends. It needs root and ip(8).
func Netns(t testing.TB, name string) string {
	t.Helper()
	RequireRoot(t)
	IP(t, "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	IP(t, "-n", name, "link", "set", "lo", "up")
	return name
}

// ServeTCP answers every connection on addr inside ns with "<name> from
// <the peer address it saw>", then closes it, until the test ends. It
// returns the address bound.
func ServeTCP(t testing.TB, ns, addr, name string) string {
	t.Helper()
	var l net.Listener
	if err := InNetns(ns, func() (err error) { l, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Fprintf(c, "%s from %s", name, host)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// ServeUDP answers every datagram on addr inside ns with "<name> from
// <the peer address it saw>", until the test ends. It returns the address
// bound.
func ServeUDP(t testing.TB, ns, addr, name string) string {
	t.Helper()
	var pc net.PacketConn
	if err := InNetns(ns, func() (err error) { pc, err = net.ListenPacket("udp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(from.String())
			_, _ = pc.WriteTo([]byte(name+" from "+host), from)
		}
	}()
	return pc.LocalAddr().String()
}

// ExchangeUDP sends a datagram ("ping", up to three times) from ns to addr
// and returns the first answer.
func ExchangeUDP(ns, addr string) (string, error) {
	var got string
	err := InNetns(ns, func() error {
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 1500)
		for try := 0; try < 3; try++ {
			if _, err := c.Write([]byte("ping")); err != nil {
				return err
			}
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			n, err := c.Read(buf)
			if err == nil {
				got = string(buf[:n])
				return nil
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return err
			}
		}
		return errors.New("no answer to three datagrams")
	})
	return got, err
}

// DialTCP connects from ns to addr, writes send (when not empty), and
// returns everything the server said until it closed, and how long it took.
func DialTCP(ns, addr, send string) (string, time.Duration, error) {
	var got string
	start := time.Now()
	err := InNetns(ns, func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if send != "" {
			if _, err := io.WriteString(c, send); err != nil {
				return err
			}
		}
		b, err := io.ReadAll(c)
		got = string(b)
		if err != nil {
			return fmt.Errorf("connected, then: %w", err)
		}
		return nil
	})
	return got, time.Since(start), err
}

// MustBeRefused wants a TCP connection from ns to addr refused at once: a
// reject answers, a drop would leave the dial to time out.
func MustBeRefused(t testing.TB, ns, addr string) {
	t.Helper()
	got, took, err := DialTCP(ns, addr, "")
	if err == nil {
		t.Fatalf("from %s to %s: connected, and the server said %q", ns, addr, got)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("from %s to %s: %v (took %s); want it refused outright, not %T", ns, addr, err, took, err)
	}
	// A drop would run into the 3 s dial timeout and fail with a timeout,
	// not ECONNREFUSED; the bound leaves room for a loaded machine.
	if took > 2500*time.Millisecond {
		t.Fatalf("from %s to %s: refused only after %s; a reject answers at once", ns, addr, took)
	}
}
