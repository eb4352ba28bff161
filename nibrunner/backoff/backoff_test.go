package backoff

import (
	"math"
	"testing"
	"time"
)

var policy = Policy{MaxRestarts: 3, Initial: time.Second, Max: 5 * time.Second, Factor: 2, ResetAfter: time.Minute}

func TestTheDelayGrowsByTheFactorAndStopsAtTheMaximum(t *testing.T) {
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 5 * time.Second, 60: 5 * time.Second, 5000: 5 * time.Second} {
		if got := policy.Delay(n); got != want {
			t.Errorf("Delay(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestAFailingInstanceRunsOutOfRestartsAndStaysOutUntilANewDeployment(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := Budget{DeploymentID: "d1"}.Started(t0)
	now := t0
	for i := 1; i <= 3; i++ {
		now = now.Add(time.Second) // fails a second after each start
		d := policy.Next(b, now, now)
		if d.OutOfRestarts || d.N != i {
			t.Fatalf("restart %d: %+v", i, d)
		}
		if want := now.Add(policy.Delay(i)); !d.At.Equal(want) {
			t.Fatalf("restart %d at %v, want %v", i, d.At, want)
		}
		now = d.At
		b = b.Restarted(d, now)
	}
	if b.Total != 3 {
		t.Fatalf("Total = %d", b.Total)
	}
	now = now.Add(time.Second)
	d := policy.Next(b, now, now)
	if !d.OutOfRestarts {
		t.Fatalf("a fourth restart was allowed: %+v", d)
	}
	b = b.Exhaust()
	// Even long after, the same deployment stays out of restarts.
	if d := policy.Next(b, now.Add(time.Hour), now.Add(time.Hour)); !d.OutOfRestarts {
		t.Fatal("out of restarts is not terminal")
	}
	if b.ForDeployment("d1") != b {
		t.Fatal("the same deployment got a fresh budget")
	}
	fresh := b.ForDeployment("d2")
	if fresh.Exhausted || fresh.Total != 0 || fresh.DeploymentID != "d2" {
		t.Fatalf("a new deployment did not get a fresh budget: %+v", fresh)
	}
}

func TestTheCountResetsAfterResetAfterWithoutAStart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := Budget{DeploymentID: "d", Window: 3, Total: 3}.Started(t0)
	failed := t0.Add(2 * time.Minute)
	d := policy.Next(b, failed, failed)
	if d.OutOfRestarts || d.N != 1 || !d.At.Equal(failed.Add(time.Second)) {
		t.Fatalf("after a quiet window the count did not reset: %+v", d)
	}
	// A failure inside the window does not reset it.
	early := t0.Add(10 * time.Second)
	if d := policy.Next(b, early, early); !d.OutOfRestarts {
		t.Fatalf("a failure inside the window reset the count: %+v", d)
	}
}

func TestAMaximumOfZeroRestartsAtOnceRatherThanLiftingTheCap(t *testing.T) {
	p := Policy{MaxRestarts: 5, Initial: time.Second, Max: 0, Factor: 10}
	for _, n := range []int{1, 2, 30, 400} {
		if got := p.Delay(n); got != 0 {
			t.Errorf("Delay(%d) = %v with maxBackoffMs 0, want 0 (min(initial·factor^(n−1), 0))", n, got)
		}
	}
	if d := p.Next(Budget{}.Started(time.Unix(1000, 0)), time.Unix(1001, 0), time.Unix(1001, 0)); !d.At.Equal(time.Unix(1001, 0)) {
		t.Fatalf("the restart is due at %v, want at the failure", d.At)
	}
}

func TestADelayTooLargeToComputeIsTheMaximumAndAShrinkingFactorIsOne(t *testing.T) {
	huge := Policy{Initial: time.Second, Max: time.Hour, Factor: 1e300}
	if got := huge.Delay(3); got != time.Hour {
		t.Errorf("Delay(3) = %v, want the maximum", got)
	}
	shrinking := Policy{Initial: time.Second, Max: time.Hour, Factor: 0.5}
	if got := shrinking.Delay(4); got != time.Second {
		t.Errorf("Delay(4) with factor 0.5 = %v, want the initial delay", got)
	}
	if got := Delay(-time.Second, time.Hour, 2, 1); got != 0 {
		t.Errorf("a negative initial delay gave %v, want 0", got)
	}
}

func TestMillisecondCountsTooLargeForADurationAreTheLongestOneNotANegativeWait(t *testing.T) {
	for _, c := range []struct {
		ms   uint64
		want time.Duration
	}{
		{0, 0},
		{1500, 1500 * time.Millisecond},
		{9223372036854, 9223372036854 * time.Millisecond}, // the largest that fits
		{9223372036855, math.MaxInt64},
		{math.MaxUint64, math.MaxInt64},
	} {
		if got := Millis(c.ms); got != c.want {
			t.Errorf("Millis(%d) = %v, want %v", c.ms, got, c.want)
		}
	}
	if got := Millis(int64(-5)); got != 0 {
		t.Errorf("Millis(-5) = %v, want 0", got)
	}
	// The old conversion wrapped: a policy of maxBackoffMs 10^13 waited
	// a negative time, so the host restarted at once.
	p := Policy{Initial: time.Second, Max: Millis(uint64(1e13)), Factor: 2}
	if d := p.Delay(60); d <= 0 {
		t.Fatalf("restart 60 of a 1 s ×2 policy capped at 10^13 ms waits %v", d)
	}
}

func TestAResetAfterOfZeroResetsTheCountAtEveryFailureAsTheGuestDoes(t *testing.T) {
	p := Policy{MaxRestarts: 2, Initial: time.Second, Max: time.Second, Factor: 1, ResetAfter: 0}
	t0 := time.Unix(1000, 0)
	b := Budget{DeploymentID: "d"}.Started(t0)
	for i := range 10 {
		failed := t0.Add(time.Duration(i) * time.Second)
		d := p.Next(b, failed, failed)
		if d.OutOfRestarts || d.N != 1 {
			t.Fatalf("failure %d with resetAfter 0: %+v; the count resets at once, so it never runs out", i+1, d)
		}
		b = b.Restarted(d, failed)
	}
}
