package plan

import (
	"sort"
	"time"
)

// SleepFacts is what the daemon knows of one app that a start short of
// memory might put to sleep.
type SleepFacts struct {
	AppID string
	// OnRequest: the document asks it on request (a running app has no
	// sleep policy: its next pass would boot it cold again).
	OnRequest bool
	// Up: its guest runs; Recorded: the daemon has its record.
	Up, Recorded bool
	// Busy: its worker is at it; WantAwake: a request waits for it.
	Busy, WantAwake bool
	// IdleSince is its last request, or its start when it has had none.
	IdleSince time.Time
	// GivenMiB is its memory size, HeldMiB what its QEMU holds.
	GivenMiB, HeldMiB uint64
}

// Sleepers are the apps of apps that a start of app starting may put to
// sleep to make room (MakeRoom picks among them): up, on request,
// recorded, with nothing in flight and no request waiting, and not the app
// starting.
func Sleepers(apps []SleepFacts, starting string) []Sleeper {
	var out []Sleeper
	for _, f := range apps {
		if f.AppID == starting || !f.OnRequest || !f.Up || !f.Recorded || f.Busy || f.WantAwake {
			continue
		}
		out = append(out, Sleeper{AppID: f.AppID, IdleSince: f.IdleSince, GivenMiB: f.GivenMiB, HeldMiB: f.HeldMiB})
	}
	return out
}

// SleepOrder orders the sleeps of one plan as they are handed out: the
// longest idle first (idleSince, by app), ties by app id, so the apps
// most overdue go first when the sleeps in flight are bounded.
func SleepOrder(sleeps []InstanceAction, idleSince map[string]time.Time) []InstanceAction {
	out := append([]InstanceAction(nil), sleeps...)
	sort.SliceStable(out, func(i, j int) bool {
		return longerIdle(out[i].AppID, idleSince[out[i].AppID], out[j].AppID, idleSince[out[j].AppID])
	})
	return out
}

// longerIdle says whether app a, idle since ta, goes before app b, idle
// since tb: the one idle longer, or by app id when they are alike.
func longerIdle(a string, ta time.Time, b string, tb time.Time) bool {
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a < b
}
