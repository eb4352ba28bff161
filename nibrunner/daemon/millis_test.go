package daemon

import (
	"testing"

	"alpnib.dev/nibrunner/guest"
)

// A restart policy reaches the guest through the VMM spec as durations
// and back as milliseconds; a count too large for a duration must arrive
// as the longest wait, not a wrapped negative one that the guest reads
// as 0 (restart at once) or, for resetAfterMs, as a reset at every exit.
func TestAHugeMillisecondCountReachesTheGuestAsTheLongestWaitNotAWrappedOne(t *testing.T) {
	g := guest.RestartPolicy{InitialBackoffMs: ms(1000).Milliseconds(), MaxBackoffMs: ms(1e13).Milliseconds(), BackoffFactor: 2,
		ResetAfterMs: ms(1<<64 - 1).Milliseconds()}
	if g.MaxBackoffMs <= 0 || g.ResetAfterMs <= 0 {
		t.Fatalf("maxBackoffMs 10^13 and resetAfterMs 2^64-1 reach the guest as %d and %d ms", g.MaxBackoffMs, g.ResetAfterMs)
	}
	if d := g.Delay(60); d <= 0 {
		t.Fatalf("the guest waits %v before restart 60", d)
	}
}
