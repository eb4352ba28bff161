package explain

import (
	"fmt"
	"strings"

	"alpnib.dev/nibrunner/plan"
)

// Admission is the sentence the report gives a start the start gate held
// back (plan.Admit), "" for one it admitted.
func Admission(a plan.Admission) string {
	r := a.Why
	switch r.Why {
	case plan.WaitNetwork:
		return "waiting to be started: the host network rules are not in place yet (" + r.Text + ")"
	case plan.WaitVolume:
		e := r.Text
		if e == "" {
			e = "it is not made yet"
		}
		return fmt.Sprintf("waiting to be started: its volume %s is not ready: %s", r.VolumeID, e)
	case plan.WaitSlot:
		if r.Text != "" {
			return r.Text
		}
		return "waiting to be started: it has no slot yet"
	case plan.WaitMemoryGiven, plan.WaitMemoryHeld:
		why := fmt.Sprintf("waiting to be started: its host is %d MiB short of the memory it needs", r.ShortMiB)
		if r.Why == plan.WaitMemoryHeld {
			why = fmt.Sprintf("waiting to be started: the guests on its host hold %d MiB of the %d MiB they may, %d MiB short of the memory it needs", r.HeldMiB, r.CapacityMiB, r.ShortMiB)
		}
		switch {
		case r.RoomComing:
			why += "; waiting for the guests going to sleep or down to make room"
		case len(a.Sleep) > 0:
			why += "; putting the longest idle on request to sleep to make room: " + strings.Join(a.Sleep, ", ")
		}
		return why
	}
	return ""
}
