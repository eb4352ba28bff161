// Package health is the pure state machine that turns what the host sees of
// an instance (its VM, its desired state, its probe results) into the state
// reported.json shows. It does no I/O: the daemon probes and feeds results
// in, and keeps the Record between passes.
package health

import (
	"time"
)

// State is an instance's reported state.
type State string

// The instance states of reported.json.
const (
	Pending   State = "pending"
	Starting  State = "starting"
	Running   State = "running"
	Unhealthy State = "unhealthy"
	Stopping  State = "stopping"
	Stopped   State = "stopped"
	Idle      State = "idle"
	Failed    State = "failed"
)

// Check is an instance's health check, reduced to what the machine needs.
type Check struct {
	Interval           time.Duration
	Grace              time.Duration
	HealthyThreshold   int
	UnhealthyThreshold int
}

// StartingProbeEvery bounds how often a starting instance is probed, so a
// fast boot is noticed quickly even when the configured interval is long.
const StartingProbeEvery = 250 * time.Millisecond

// ProbeInterval returns how long to wait between probes of an instance in
// state s: min(250ms, interval) while starting, the interval otherwise.
func (c Check) ProbeInterval(s State) time.Duration {
	if s == Starting && c.Interval > StartingProbeEvery {
		return StartingProbeEvery
	}
	return c.Interval
}

// Record is what the machine remembers of one instance between passes.
type Record struct {
	State State
	// Successes and Failures count consecutive probe results.
	Successes int
	Failures  int
	// EverHealthy is set once the instance reached running since it was
	// started; it tells unhealthy (it worked once) from failed (it never did).
	EverHealthy   bool
	StartedAt     time.Time
	LastHealthyAt time.Time
}

// Input is one step's observation.
type Input struct {
	// VMFailed: the VM could not be started, or its process exited.
	VMFailed bool
	// Active: the instance should be up now and its VM is up or starting.
	Active bool
	// Desired is the document's desiredState (running, on-request, stopped);
	// Waiting is set when a start is held back (admission, backoff, layers).
	Desired string
	Waiting bool
	// Probe is this step's probe result, nil when no probe ran.
	Probe *bool
	Now   time.Time
}

// Started returns the record of an instance whose VM was just started.
func Started(now time.Time) Record {
	return Record{State: Starting, StartedAt: now}
}

// Step advances r by one observation.
func Step(c Check, r Record, in Input) Record {
	switch {
	case in.VMFailed:
		r.State = Failed
		r.Successes, r.Failures = 0, 0
		return r
	case !in.Active:
		r.Successes, r.Failures = 0, 0
		r.EverHealthy = false
		switch {
		case in.Desired == "on-request" && !in.Waiting:
			r.State = Idle
		case in.Desired == "stopped":
			r.State = Stopped
		default:
			r.State = Pending
		}
		return r
	}
	if r.State != Running && r.State != Unhealthy && r.State != Failed {
		r.State = Starting
	}
	if in.Probe != nil {
		if *in.Probe {
			r.Successes++
			r.Failures = 0
		} else {
			r.Successes = 0
			// Failures inside the grace period are the app still booting.
			if in.Now.Sub(r.StartedAt) >= c.Grace {
				r.Failures++
			}
		}
	}
	healthy := max(c.HealthyThreshold, 1)
	unhealthy := max(c.UnhealthyThreshold, 1)
	switch {
	case r.Successes >= healthy:
		r.State = Running
		r.EverHealthy = true
		r.LastHealthyAt = in.Now
	case r.Failures >= unhealthy:
		if r.EverHealthy {
			r.State = Unhealthy
		} else {
			r.State = Failed
		}
	}
	if r.State == Running && in.Probe != nil && *in.Probe {
		r.LastHealthyAt = in.Now
	}
	return r
}
