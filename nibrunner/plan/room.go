package plan

import (
	"sort"
	"time"
)

// Sleeper is a guest up on request with no request in flight: one the host
// may put to sleep to make room for a start.
type Sleeper struct {
	AppID string
	// IdleSince is its last request, or its start when it has had none.
	IdleSince time.Time
	// GivenMiB is its memory size; HeldMiB what its QEMU holds of the
	// host (its given memory while it has not been measured).
	GivenMiB, HeldMiB uint64
}

// MakeRoom picks the sleepers to put to sleep so that a start short by
// shortGiven MiB of given memory and shortHeld MiB of held memory fits:
// the longest idle first, as few as cover both. It picks none when even
// all of them would not: sleeping them would free memory and still refuse
// the start.
func MakeRoom(shortGiven, shortHeld uint64, sleepers []Sleeper) []string {
	s := append([]Sleeper(nil), sleepers...)
	sort.SliceStable(s, func(i, j int) bool {
		return longerIdle(s[i].AppID, s[i].IdleSince, s[j].AppID, s[j].IdleSince)
	})
	var picked []string
	var given, held uint64
	for _, x := range s {
		if given >= shortGiven && held >= shortHeld {
			break
		}
		picked = append(picked, x.AppID)
		given, held = given+x.GivenMiB, held+x.HeldMiB
	}
	if given < shortGiven || held < shortHeld {
		return nil
	}
	return picked
}
