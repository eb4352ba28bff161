package plan

import (
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

// Status is what the report says of one instance: its state, the
// sentence a person acts on that the planner passes on (the host's
// problem, the guest's failure, the note of a held-back start; "" when
// there is nothing to say), and the restart it names, which plan/explain
// words after it (explain.InstanceStatus). The daemon renders the rest
// (meters, the guest's address, timestamps).
type Status struct {
	State   health.State
	Message string
	Restart RestartNote
}

// RestartSays is which restart an instance's report names: a typed
// reason, worded by plan/explain from RestartNote's facts.
type RestartSays int

// What an instance's report says of its restarts.
const (
	// RestartNothing: nothing.
	RestartNothing RestartSays = iota
	// RestartOutOf: it was restarted N times, MaxRestarts allowed, and
	// failed again: the Message is its last failure.
	RestartOutOf
	// RestartIn: its guest is up but failing, and is restarted In.
	RestartIn
	// RestartNext: its guest failed, and restart N of MaxRestarts comes In.
	RestartNext
)

var restartSaysNames = [...]string{"nothing", "out of restarts", "restart of a failing guest", "next restart"}

func (r RestartSays) String() string { return enumName(restartSaysNames[:], int(r), "RestartSays") }

// RestartNote is the restart an instance's report names.
type RestartNote struct {
	Says        RestartSays
	N           int
	MaxRestarts uint32
	In          time.Duration
}

// InstanceStatus decides what the report says of instance in, from obs.
// The daemon asks it after acting, from a second observation, because
// acting changes what is true: a start handed to a worker this pass is
// "starting", not "pending".
//
// The first rule that holds wins: a host that cannot carry the instance; a
// start of this deployment that failed; a deployment out of restarts; a
// guest up (its health, and when it failed, when it is restarted); a
// failed guest waiting for its restart; a start under way; and otherwise
// what health.Step says of an instance that is not up (pending, idle,
// stopped), with the reason a start is held back.
func InstanceStatus(in *desired.DesiredInstance, obs Observed) Status {
	app, dep := string(in.AppId), string(in.DeploymentId)
	o := obs.Instances[app]
	// The host's record speaks of this deployment, not an older one.
	rec := o.Recorded != "" && o.Recorded == dep
	up := o.VM == Up && o.DeploymentID == dep
	stopped := in.DesiredState == desired.StateStopped
	var s Status
	switch {
	case obs.Problems[app] != "":
		s = Status{State: health.Failed, Message: "this host cannot run it: " + obs.Problems[app]}
	case o.StartFailure != "" && o.StartFailed == dep && !stopped:
		s = Status{State: health.Failed, Message: o.StartFailure}
	case rec && o.outOfRestarts(dep) && !up && !stopped:
		s = Status{State: health.Failed, Message: o.FailReason,
			Restart: RestartNote{Says: RestartOutOf, N: o.Budget.Total, MaxRestarts: in.Config.RestartPolicy.MaxRestarts}}
	case up && rec:
		s.State = o.Health
		if s.State == health.Failed || s.State == health.Unhealthy {
			s.Message = o.FailReason
			if next := NextRestart(in, o, obs.Now); !next.OutOfRestarts && next.At.After(obs.Now) {
				s.Restart = RestartNote{Says: RestartIn, In: next.At.Sub(obs.Now)}
			}
		}
	case rec && !o.FailedAt.IsZero() && !stopped:
		s = Status{State: health.Failed, Message: o.FailReason}
		if next := NextRestart(in, o, obs.Now); !next.OutOfRestarts && next.At.After(obs.Now) {
			s.Restart = RestartNote{Says: RestartNext, N: next.N, MaxRestarts: in.Config.RestartPolicy.MaxRestarts, In: next.At.Sub(obs.Now)}
		}
	case o.Acting && !up && !stopped:
		// Its worker is starting or waking it.
		s.State = health.Starting
	default:
		waiting := o.Note != "" ||
			in.DesiredState == desired.StateRunning ||
			// An on-request app's first boot is still to come.
			in.DesiredState == desired.StateOnRequest && !(rec && o.Booted)
		s.State = health.Step(health.Check{}, health.Record{}, health.Input{Desired: string(in.DesiredState), Waiting: waiting}).State
		s.Message = o.Note
		if s.State == health.Pending && s.Message == "" {
			s.Message = "waiting to be started: the next converge pass boots it"
		}
	}
	if s.Message == "" && s.Restart.Says == RestartNothing && rec {
		s.Message = o.Message // a sleep or stop that failed
	}
	return s
}

// Converged reports whether an instance asked want is where it was asked
// to be when it is got.
func Converged(want desired.DesiredInstanceState, got health.State) bool {
	switch want {
	case desired.StateRunning:
		return got == health.Running
	case desired.StateOnRequest:
		return got == health.Running || got == health.Idle
	case desired.StateStopped:
		return got == health.Stopped
	}
	return false
}

// ConvergedSince is when an instance asked want, got now, converged: since
// (when it was first seen converged, zero if it was not) while it stays
// converged, now when it just did, and zero when it is not.
func ConvergedSince(want desired.DesiredInstanceState, got health.State, since, now time.Time) time.Time {
	switch {
	case !Converged(want, got):
		return time.Time{}
	case since.IsZero():
		return now
	}
	return since
}

// RoundDuration is how the host's sentences say a wait: to a tenth of a
// second, never negative.
func RoundDuration(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(100 * time.Millisecond)
}
