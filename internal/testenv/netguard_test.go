package testenv

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// The guard is what makes "tests never send a packet off the machine" true
// rather than hoped for; in CI (NIB_INTEGRATION=1) this fails when it is
// off, and on a developer's machine it skips saying so.
func TestUnderTheNetworkGuardADialOffTheMachineFailsAtOnce(t *testing.T) {
	RequireNetGuard(t)
	start := time.Now()
	c, err := net.DialTimeout("tcp", "[2001:db8::1]:80", 5*time.Second)
	took := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("a connection to [2001:db8::1]:80 was made under the network guard")
	}
	if !errors.Is(err, syscall.ENETUNREACH) {
		t.Fatalf("dial [2001:db8::1]:80: %v; want network is unreachable", err)
	}
	if took > time.Second {
		t.Fatalf("the dial took %s to fail; under the guard it fails at once", took)
	}
	// IPv4 too.
	if c, err := net.DialTimeout("tcp", "192.0.2.1:80", 5*time.Second); !errors.Is(err, syscall.ENETUNREACH) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("dial 192.0.2.1:80: %v; want network is unreachable", err)
	}
}

func TestUnderTheNetworkGuardLoopbackStillWorks(t *testing.T) {
	RequireNetGuard(t)
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("listen %s: %v", addr, err)
		}
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatalf("dial %s: %v", ln.Addr(), err)
		}
		c.Close()
		ln.Close()
	}
}
