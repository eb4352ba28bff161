package memtest

import "testing"

var sink []byte

func TestAllocatedCountsWhatTheFunctionAllocates(t *testing.T) {
	const n = 8 << 20
	got := Allocated(func() { sink = make([]byte, n) })
	if got < n || got > 2*n {
		t.Fatalf("allocating %d bytes measured %d", n, got)
	}
	if small := Allocated(func() {}); small > 64<<10 {
		t.Fatalf("allocating nothing measured %d", small)
	}
	sink = nil
}
