package execwire

import "testing"

// A window the peer sent before it saw the stream end arrives after the
// sender closed its credit: it is taken and changes nothing (it panicked
// the guest's init with a close of a closed channel).
func TestAGrantAfterTheCreditClosedIsHarmless(t *testing.T) {
	c := NewCredit(1)
	c.Close()
	if err := c.Grant(1024); err != nil {
		t.Fatalf("a grant after close: %v", err)
	}
	c.Close()
}
