package daemon

import (
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/vmm"
)

// app is everything the daemon knows about one app: what it remembers
// across restarts (its record, slot and meters) and what it holds only for
// this run (its guest as last seen, its prober, this pass's note, the last
// measurement, its failed sleeps, and its worker's state). One value per app: forgetting an app is deleting its
// entry from apps.byID. Every field is read and written under Daemon.mu.
type app struct {
	id string
	// rec is nil until the app was started or its guest observed.
	rec *record
	// persisted is rec as the database holds it.
	persisted []byte
	// slot is the app's slot number, when hasSlot.
	slot    int
	hasSlot bool
	// meters only ever grow; metered says the database or a pass has some.
	meters  db.Meters
	metered bool
	// vm is the app's guest as last seen by a pass or left by its worker;
	// hasVM is false when it has none.
	vm    vmm.Status
	hasVM bool
	// prober runs the health check while the guest is up.
	prober *prober
	// note says why a start is held back, this pass; heldBack is the note
	// the last pass that ended left.
	note, heldBack string
	// failure is why the worker's last start failed (layers that cannot be
	// made ready, a start the VMM refused), for failureDep: it fails the
	// instance until a start of that deployment succeeds.
	failure, failureDep string
	measured            measurement
	// failedSleeps counts the sleeps that failed in a row, the last at
	// sleepFailedAt: the planner holds the next try back (plan.SleepBackoff).
	failedSleeps  int
	sleepFailedAt time.Time

	// busy: an action is in flight on the app's worker; nothing else is
	// started for the app until it commits.
	busy bool
	// reservedMiB is the memory a start in flight holds (admission counts
	// it beside every guest up).
	reservedMiB uint64
	// goingDown: the action in flight sleeps or stops the guest, whose
	// memory admission then counts as coming back.
	goingDown bool
	// wantAwake: a request waits for the app (Wake); wantAsleep: an
	// operator asked it to sleep (Sleep). The planner reads both.
	wantAwake, wantAsleep bool
	// changedAt is the daemon's sequence number of the app's last commit: a
	// pass that observed the host before it does not act on the app.
	changedAt uint64
	// changed is closed, and replaced, whenever the app's state changes:
	// what a Wake or Sleep waits on.
	changed chan struct{}
}

// measurement is an app's guest as last measured (account).
type measurement struct {
	m      vmm.Measurement
	pid    int
	cpu    time.Duration
	rx, tx uint64
	at     time.Time
}

// up reports whether the app's guest runs.
func (a *app) up() bool { return a.hasVM && a.vm.State == vmm.Running }

// signal wakes everyone waiting on the app's state.
func (a *app) signal() {
	if a.changed != nil {
		close(a.changed)
	}
	a.changed = make(chan struct{})
}

// wait returns the channel closed at the app's next change.
func (a *app) wait() <-chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.changed
}

// appOf returns app id's entry, made empty if there is none.
func (ps *apps) appOf(id string) *app {
	a := ps.byID[id]
	if a == nil {
		a = &app{id: id}
		ps.byID[id] = a
	}
	return a
}

// known returns app id's entry, or an empty one (not added) if the daemon
// knows nothing of it yet.
func (ps *apps) known(id string) *app {
	if a := ps.byID[id]; a != nil {
		return a
	}
	return &app{id: id}
}

// record returns app id's record, or nil.
func (ps *apps) record(id string) *record {
	if a := ps.byID[id]; a != nil {
		return a.rec
	}
	return nil
}

// slots returns every app's slot, as slot.Assign takes them.
func (ps *apps) slots() map[string]int {
	out := make(map[string]int, len(ps.byID))
	for id, a := range ps.byID {
		if a.hasSlot {
			out[id] = a.slot
		}
	}
	return out
}

// note says why app id's start is held back this pass.
func (ps *apps) note(id, why string) { ps.appOf(id).note = why }

// memoryInUse is the memory given to every guest up and every start in
// flight, and what they hold of the host (heldMiB; a start in flight
// counts its whole size).
func (ps *apps) memoryInUse() (given, held uint64) {
	for _, a := range ps.byID {
		if a.up() && a.rec != nil {
			given += a.rec.MemoryMiB
			held += a.heldMiB()
		}
		given += a.reservedMiB
		held += a.reservedMiB
	}
	return given, held
}

// heldMiB is what a's guest, up, holds of the host: its QEMU's share as
// last measured, or its whole given memory until this guest was measured.
func (a *app) heldMiB() uint64 {
	if m := a.measured; !m.at.IsZero() && m.pid == a.vm.PID && m.m.HostMemoryBytes > 0 {
		return (m.m.HostMemoryBytes + 1<<20 - 1) >> 20
	}
	return a.rec.MemoryMiB
}

// freeing is the memory of the guests going to sleep or down now.
func (ps *apps) freeing() (given, held uint64) {
	for _, a := range ps.byID {
		if a.goingDown && a.up() && a.rec != nil {
			given, held = given+a.rec.MemoryMiB, held+a.heldMiB()
		}
	}
	return given, held
}

// sleepers are the guests a start short of memory may put to sleep, as
// plan.Sleepers decides from what the daemon knows of each app (mu held).
func (ps *apps) sleepers(starting string) []plan.Sleeper {
	facts := make([]plan.SleepFacts, 0, len(ps.byID))
	for id, a := range ps.byID {
		f := plan.SleepFacts{AppID: id, Up: a.up(), Busy: a.busy, WantAwake: a.wantAwake}
		if in := ps.host.instance(id); in != nil {
			f.OnRequest = in.DesiredState == desired.StateOnRequest
		}
		if a.rec != nil && f.Up && f.OnRequest {
			f.Recorded = true
			f.IdleSince, f.GivenMiB, f.HeldMiB = ps.lastActive(id), a.rec.MemoryMiB, a.heldMiB()
		}
		facts = append(facts, f)
	}
	return plan.Sleepers(facts, starting)
}

// lastActive is when app last had a request, or started when it has had
// none since.
func (ps *apps) lastActive(app string) time.Time {
	var t time.Time
	if rec := ps.record(app); rec != nil {
		t = rec.StartedAt
	}
	if ps.deps.Traffic != nil {
		if last, _ := ps.deps.Traffic.Activity(app); last.After(t) {
			t = last
		}
	}
	return t
}
