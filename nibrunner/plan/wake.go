package plan

import (
	"strconv"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

// Wakeable reports whether a request may wake instance in (nil: the
// document does not list it): the document asks it up, and the host can
// carry it (no problem is recorded for it). A request for an app that is
// not wakeable is answered "not running".
func Wakeable(in *desired.DesiredInstance, problems map[string]string) bool {
	return in != nil && in.DesiredState != desired.StateStopped && problems[string(in.AppId)] == ""
}

// WakeWhy is why the planner's answer to a waiting request brings the
// app up or not: a typed reason, worded by plan/explain (WakeRefused).
type WakeWhy int

// A wake's answers from the planner.
const (
	// WakeGoesAhead: the action brings the app up.
	WakeGoesAhead WakeWhy = iota
	// WakeOutOfRestarts: the deployment spent its restart budget.
	WakeOutOfRestarts
	// WakePlannerFirst: the planner asks another action (Kind) first.
	WakePlannerFirst
	// WakeAwaitsRestart: it failed, and its restart's backoff is not over.
	WakeAwaitsRestart
	// WakeHeldBack: its start is held back (Note: the pass's sentence).
	WakeHeldBack
	// WakeVolumeNotReady: its volume is not ready.
	WakeVolumeNotReady
)

var wakeWhyNames = [...]string{"goes ahead", "out of restarts", "planner first", "awaits restart", "held back", "volume not ready"}

func (w WakeWhy) String() string { return enumName(wakeWhyNames[:], int(w), "WakeWhy") }

// WakeRefusal is why a wake cannot bring an app up now (WakeGoesAhead:
// it can), with the facts its sentence names.
type WakeRefusal struct {
	Why WakeWhy
	// Kind is the action the planner asks first (WakePlannerFirst).
	Kind InstanceKind
	// Note is why its start is held back (WakeHeldBack).
	Note string
}

// Refused tells whether the wake cannot bring the app up now.
func (r WakeRefusal) Refused() bool { return r.Why != WakeGoesAhead }

// WakeAction is the planner's answer to a request that waits for instance
// in of doc, from obs (where the daemon marked it WantAwake): the action
// that brings it up (Start, Wake, Replace, Recover or Restart), or why the
// wake cannot bring it up now, which the wake answers in words
// (explain.WakeRefused). When that is because the deployment has just
// spent its restart budget the action is GiveUp, which the daemon records
// as a pass would.
func WakeAction(doc *desired.HostDesiredState, in *desired.DesiredInstance, obs Observed) (InstanceAction, WakeRefusal) {
	x, ok := App(doc, in, obs)
	if ok {
		switch x.Kind {
		case Start, Wake, Replace, Recover, Restart:
			return x, WakeRefusal{}
		case GiveUp:
			return x, WakeRefusal{Why: WakeOutOfRestarts}
		case Sleep, Stop, Forget, NoAction:
		}
		return x, WakeRefusal{Why: WakePlannerFirst, Kind: x.Kind}
	}
	dep := string(in.DeploymentId)
	o := obs.Instances[string(in.AppId)]
	switch {
	case o.Recorded == dep && o.outOfRestarts(dep):
		return x, WakeRefusal{Why: WakeOutOfRestarts}
	case o.VM == Exited || o.failedToStart(dep):
		// Its restart's backoff is not over (the guest exited, or its
		// last start failed).
		return x, WakeRefusal{Why: WakeAwaitsRestart}
	case o.Note != "":
		return x, WakeRefusal{Why: WakeHeldBack, Note: o.Note}
	}
	return x, WakeRefusal{Why: WakeVolumeNotReady}
}

// WakeFacts is what the daemon knows of an app a wake waits for, each
// time the wake looks again (after the app's state changed, or a pass
// ended).
type WakeFacts struct {
	// Closing: the daemon is closing.
	Closing bool
	// Wakeable is Wakeable of the app's instance.
	Wakeable bool
	// PassHeldBack: the pass the wake waited for (the app had no slot)
	// ended, and the app still has no slot, no guest and nothing in
	// flight.
	PassHeldBack bool
	// Probing: a prober watches the app's guest (up, or booting); Health
	// is what it says, ProbeFailure its sentence for a failed check.
	Probing      bool
	Health       health.State
	ProbeFailure string
	// Busy: the app's worker is at it; Up: its guest runs.
	Busy, Up bool
	// WantAwake: a wake still asks for the app (a start that committed
	// without a guest, or a wake that gave up, cleared it).
	WantAwake bool
	// Failure is why its last start failed; HasSlot whether it has a
	// slot; HeldBack the note the last pass left (why its start was held
	// back).
	Failure  string
	HasSlot  bool
	HeldBack string
}

// WakeStep is what a wake does next.
type WakeStep int

const (
	// WakeWait: wait for the app's next change or the next pass.
	WakeWait WakeStep = iota
	// WakeUp: the guest's health check passed; the wake answers.
	WakeUp
	// WakeRefused: the wake answers WakeEnd.Why.
	WakeRefused
	// WakeClosed: the daemon is closing.
	WakeClosed
	// WakeNotRunning: the app is not wakeable (answered "not running").
	WakeNotRunning
	// WakeProbe: the guest is up with no prober (a sleep that failed):
	// probe it, and wait for the probe.
	WakeProbe
	// WakeDecide: ask the planner for the app (WakeAction) and hand its
	// action to the app's worker.
	WakeDecide
)

// WakeEnd is what a wake does next, and why.
type WakeEnd struct {
	Step WakeStep
	// Why is the sentence a refused wake answers.
	Why string
	// Release: the app is no longer wanted awake: the wake ended, or what
	// it waits for now is the guest's health check.
	Release bool
}

// WakeNext decides a wake's next step from f. The first rule that holds
// wins: the daemon closing; the app not wakeable; the pass it waited for
// holding its first start back; a prober's verdict (passed, failed, or
// still to come); a worker at it; a guest up with no prober; a start that
// ended without a guest; and otherwise the planner is asked.
func WakeNext(f WakeFacts) WakeEnd {
	switch {
	case f.Closing:
		return WakeEnd{Step: WakeClosed}
	case !f.Wakeable:
		return WakeEnd{Step: WakeNotRunning, Release: true}
	case f.PassHeldBack:
		return WakeEnd{Step: WakeRefused, Why: or(f.HeldBack, MsgNoSlotYet), Release: true}
	case f.Probing:
		switch f.Health {
		case health.Running:
			return WakeEnd{Step: WakeUp, Release: true}
		case health.Failed, health.Unhealthy:
			return WakeEnd{Step: WakeRefused, Why: f.ProbeFailure, Release: true}
		}
		return WakeEnd{Step: WakeWait, Release: true}
	case f.Busy:
		return WakeEnd{Step: WakeWait}
	case f.Up:
		return WakeEnd{Step: WakeProbe}
	case !f.WantAwake:
		why := f.Failure
		if why == "" && !f.HasSlot {
			why = f.HeldBack
		}
		return WakeEnd{Step: WakeRefused, Why: or(why, MsgWentDownWaking), Release: true}
	}
	return WakeEnd{Step: WakeDecide}
}

func or(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// enumName is the name of value v of an enum typ whose names are in
// order, or typ(v) for a value beyond them.
func enumName(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}
