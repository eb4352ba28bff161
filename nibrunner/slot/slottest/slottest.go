// Package slottest hands a test a slot of its own on this machine: one
// that no other test process holds and whose eight host ports nothing
// listens on or has connected from.
//
// Tests that boot real guests on QEMU's user network bind the slot's
// host port (hostfwd). A port picked at random in the kernel's ephemeral
// range can be the local port of any outgoing connection on the machine
// (go test runs packages as processes at once, with S3, HTTP and QMP
// traffic), and QEMU then fails with "Could not set up host forwarding
// rule". So slots come from below (or above) that range only, each is
// held by a file lock until the test ends, and each port is bound once
// to see that it is free.
package slottest

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"alpnib.dev/internal/flock"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/slot"
)

// firstSlot is the lowest slot handed out: the daemon assigns the lowest
// free slots itself, so tests that let it assign use 0, 1, 2…
const firstSlot = 100

// Free returns a slot held for t alone until t ends.
func Free(t testing.TB) int {
	t.Helper()
	lo, hi := network.EphemeralPorts()
	candidates := Candidates(lo, hi)
	if len(candidates) == 0 {
		t.Fatalf("no slot has all its host ports outside the ephemeral range %d–%d (net.ipv4.ip_local_port_range)", lo, hi)
	}
	dir := filepath.Join(os.TempDir(), "nibrun-test-slots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("make the slot lock folder: %v", err)
	}
	n, f, ok := pick(dir, candidates, rand.IntN(len(candidates)))
	if !ok {
		t.Fatalf("every one of %d candidate slots is held by another test or has a host port in use", len(candidates))
	}
	t.Cleanup(func() { f.Close() }) // closing the file releases the lock
	return n
}

// pick takes the first candidate, from index start on and round, whose
// lock under dir it gets and whose ports are free; the open lock file
// holds it.
func pick(dir string, candidates []int, start int) (int, *os.File, bool) {
	for i := range candidates {
		n := candidates[(start+i)%len(candidates)]
		f, ok := hold(dir, n)
		if !ok {
			continue
		}
		if !portsFree(n) {
			f.Close()
			continue
		}
		return n, f, true
	}
	return 0, nil, false
}

// Candidates lists the slots from firstSlot up whose host ports all lie
// outside the ephemeral port range lo–hi.
func Candidates(lo, hi int) []int {
	var out []int
	for n := firstSlot; n < slot.Max; n++ {
		if !slot.HasPortIn(n, lo, hi) {
			out = append(out, n)
		}
	}
	return out
}

// hold takes slot n's lock without waiting.
func hold(dir string, n int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if held, err := flock.Try(f, flock.Exclusive); !held || err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}

// portsFree binds each of slot n's host ports on loopback, TCP and UDP,
// and lets go again.
func portsFree(n int) bool {
	for p := slot.HostPort(n); p < slot.HostPort(n)+slot.PortsPerSlot; p++ {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		l.Close()
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		c.Close()
	}
	return true
}
