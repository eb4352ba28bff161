package slottest

import (
	"net"
	"strconv"
	"testing"

	"alpnib.dev/nibrunner/slot"
)

func TestCandidateSlotsKeepEveryHostPortOutsideTheEphemeralRange(t *testing.T) {
	c := Candidates(32768, 60999)
	for _, n := range c {
		first, last := slot.HostPort(n), slot.HostPort(n)+slot.PortsPerSlot-1
		if n < firstSlot || (last >= 32768 && first <= 60999) {
			t.Fatalf("slot %d (ports %d–%d) is a candidate", n, first, last)
		}
	}
	// Ports 21800–32767 are slots 100–1470; from 61000 up, 5000 to the last.
	if len(c) != 1371+(slot.Max-5000) || c[0] != firstSlot || c[1370] != 1470 || c[1371] != 5000 || c[len(c)-1] != slot.Max-1 {
		t.Fatalf("%d candidates: %d…%d", len(c), c[0], c[len(c)-1])
	}
}

func TestAFreeSlotIsHeldAgainstTheNextCallerAndItsPortsAreFree(t *testing.T) {
	a := Free(t)
	for range 20 {
		if b := Free(t); b == a {
			t.Fatalf("slot %d handed out twice", a)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(slot.HostPort(a))))
	if err != nil {
		t.Fatalf("slot %d's host port is not free: %v", a, err)
	}
	l.Close()
}

func TestASlotWhosePortSomeoneListensOnIsPassedOver(t *testing.T) {
	dir := t.TempDir()
	// Real slots, held, so that no other test probes their ports meanwhile.
	busy := Free(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(slot.HostPort(busy)+3)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	free := Free(t)
	n, f, ok := pick(dir, []int{busy, free}, 0)
	if !ok {
		t.Fatal("nothing picked")
	}
	defer f.Close()
	if n != free {
		t.Fatalf("picked slot %d, whose port %d is taken; %d was free", n, slot.HostPort(busy)+3, free)
	}
	if _, _, ok := pick(dir, []int{free}, 0); ok {
		t.Fatalf("slot %d picked again while its lock is held", free)
	}
}
