package daemon

import (
	"time"

	"alpnib.dev/nibrunner/db"
)

// app is everything the daemon knows about one app: what it remembers
// across restarts (its record, slot and meters) and what it holds only for
// this run (its prober, this pass's note, the last measurement, a scheduled
// restart, a failed sleep's retry). One value per app: forgetting an app is
// deleting its entry from Daemon.apps.
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
	// prober runs the health check while the guest is up.
	prober *prober
	// note says why a start is held back, this pass; noteFails says the
	// note fails the instance (a layer that cannot be made ready, a start
	// the VMM refused) rather than keep it pending.
	note      string
	noteFails bool
	measured  measurement
	// restartAt is when a scheduled restart comes due (zero: none).
	restartAt time.Time
	// sleepRetry holds back a sleep that failed.
	sleepRetry retry
}

// appOf returns app id's entry, made empty if there is none.
func (d *Daemon) appOf(id string) *app {
	a := d.apps[id]
	if a == nil {
		a = &app{id: id}
		d.apps[id] = a
	}
	return a
}

// known returns app id's entry, or an empty one (not added) if the daemon
// knows nothing of it yet.
func (d *Daemon) known(id string) *app {
	if a := d.apps[id]; a != nil {
		return a
	}
	return &app{id: id}
}

// record returns app id's record, or nil.
func (d *Daemon) record(id string) *record {
	if a := d.apps[id]; a != nil {
		return a.rec
	}
	return nil
}

// slots returns every app's slot, as slot.Assign takes them.
func (d *Daemon) slots() map[string]int {
	out := make(map[string]int, len(d.apps))
	for id, a := range d.apps {
		if a.hasSlot {
			out[id] = a.slot
		}
	}
	return out
}

// note says why app id's start is held back this pass.
func (d *Daemon) note(id, why string, fails bool) {
	a := d.appOf(id)
	a.note, a.noteFails = why, fails
}
