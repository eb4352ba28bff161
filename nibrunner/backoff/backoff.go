// Package backoff decides when the host may start an instance's VM again
// after it failed: delay(n) = min(initial·factor^(n−1), max), a count that
// resets once the instance has gone resetAfter without a start, and a
// budget of maxRestarts after which the instance is out of restarts until a
// new deployment replaces it. It is pure: the caller keeps the Budget.
//
// Wakes never go through here: putting an on-request app to sleep and
// waking it is the platform's doing, not a failure, so it must never spend
// the tenant's restart budget.
package backoff

import (
	"math"
	"time"
)

// Policy is a document's restartPolicy.
type Policy struct {
	MaxRestarts int
	Initial     time.Duration
	// Max caps the delay; 0 caps it at 0, not "no cap" (see Delay).
	Max        time.Duration
	Factor     float64
	ResetAfter time.Duration
}

// Delay returns how long to wait before restart number n (n ≥ 1).
func (p Policy) Delay(n int) time.Duration { return Delay(p.Initial, p.Max, p.Factor, n) }

// Delay is the one reading of a restartPolicy's delay, which the host's
// VM restarts (Policy.Delay) and the guest init's process restarts
// (guest.RestartPolicy.Delay) share: min(initial·factor^(n−1), ceiling)
// for restart number n (taken as 1 below 1). The ceiling (maxBackoffMs) is
// a cap like any other, so a ceiling of 0 is a delay of 0 (restart at
// once), as the spec's formula and the reference daemon read it; it never
// means "no cap". A factor below 1 is taken as 1 (the delay never
// shrinks), a negative initial or ceiling as 0, and a delay too large to
// compute is the ceiling.
func Delay(initial, ceiling time.Duration, factor float64, n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if factor < 1 || math.IsNaN(factor) {
		factor = 1
	}
	initial, ceiling = max(initial, 0), max(ceiling, 0)
	d := float64(initial) * math.Pow(factor, float64(n-1))
	if math.IsNaN(d) || d >= float64(ceiling) {
		return ceiling
	}
	return time.Duration(d)
}

// Budget is what the host remembers of one instance's restarts. It belongs
// to one deployment: a new DeploymentID starts a fresh Budget.
type Budget struct {
	DeploymentID string
	// Window counts restarts since the count last reset.
	Window int
	// Total counts every restart of this deployment (reported as
	// restartCount).
	Total int
	// LastStart is when the VM was last started (first boot or restart).
	LastStart time.Time
	// Exhausted is terminal until a new deployment.
	Exhausted bool
}

// ForDeployment returns b if it belongs to deploymentID, else a fresh
// budget for it: a new deployment is the only way out of restarts.
func (b Budget) ForDeployment(deploymentID string) Budget {
	if b.DeploymentID == deploymentID {
		return b
	}
	return Budget{DeploymentID: deploymentID}
}

// Started records a start at now that was not a restart (the first boot of
// a deployment, or a wake).
func (b Budget) Started(now time.Time) Budget {
	b.LastStart = now
	return b
}

// Decision says what to do with a failed instance.
type Decision struct {
	// OutOfRestarts: no restart, ever, for this deployment.
	OutOfRestarts bool
	// At is the earliest time the restart may happen.
	At time.Time
	// N is the number of the restart in the current window (1-based).
	N int
}

// Next decides on a restart of an instance that failed at failedAt, as
// seen at now. It does not change the budget: call Restarted when the
// restart actually happens.
func (p Policy) Next(b Budget, failedAt, now time.Time) Decision {
	if b.Exhausted {
		return Decision{OutOfRestarts: true}
	}
	n := b.Window + 1
	// A resetAfter of 0 resets at every failure, so the budget is never
	// spent: the spec's "resets after resetAfterMs without a start" read
	// literally, as nibrun-init and the reference daemon read it.
	if !b.LastStart.IsZero() && now.Sub(b.LastStart) >= p.ResetAfter && failedAt.Sub(b.LastStart) >= p.ResetAfter {
		n = 1
	}
	if n > p.MaxRestarts {
		return Decision{OutOfRestarts: true, N: n}
	}
	return Decision{At: failedAt.Add(p.Delay(n)), N: n}
}

// Restarted records that restart d happened at now.
func (b Budget) Restarted(d Decision, now time.Time) Budget {
	b.Window = d.N
	b.Total++
	b.LastStart = now
	return b
}

// Exhaust marks the budget spent for good.
func (b Budget) Exhaust() Budget {
	b.Exhausted = true
	return b
}

// Millis is a policy's count of milliseconds (initialBackoffMs,
// maxBackoffMs, resetAfterMs) as a duration: a negative count is 0, and
// one too large for a time.Duration (about 292 years) is the longest
// duration, where multiplying would wrap to a negative wait.
func Millis[T ~int64 | ~uint64](ms T) time.Duration {
	const most = uint64(math.MaxInt64 / int64(time.Millisecond))
	switch {
	case ms < 0:
		return 0
	case uint64(ms) > most:
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}
