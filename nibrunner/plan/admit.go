package plan

import (
	"fmt"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/slot"
)

// StartFacts are what the host knows when a start (or wake, restart,
// replacement) the planner asked for is about to go to the app's worker.
type StartFacts struct {
	// NetworkReady: the host network rules were applied; NetworkErr is
	// why not.
	NetworkReady bool
	NetworkErr   string
	// VolumeReady: the instance's volume is on the host; VolumeErr is why
	// not, when a pass tried and failed.
	VolumeReady bool
	VolumeErr   string
	// InUseMiB is the memory of every guest up and every start in flight;
	// CapacityMiB what guests may use.
	InUseMiB, CapacityMiB uint64
	// HasSlot: the app holds a slot; NoSlot is why not, when assigning one
	// failed this pass (every slot taken, the slot not recorded).
	HasSlot bool
	NoSlot  string
}

// Admit is the start gate: whether a start of in may go ahead now, given
// f. It returns the memory the guest will hold, or the sentence the report
// gives while the start waits for a later pass. The first gate that is
// shut says why: the network rules, the volume, memory, a slot.
func Admit(in *desired.DesiredInstance, f StartFacts) (needMiB uint64, why string) {
	switch {
	case !f.NetworkReady:
		return 0, "waiting to be started: the host network rules are not in place yet (" + f.NetworkErr + ")"
	case !f.VolumeReady:
		e := f.VolumeErr
		if e == "" {
			e = "it is not made yet"
		}
		return 0, fmt.Sprintf("waiting to be started: its volume %s is not ready: %s", in.VolumeId, e)
	}
	need := uint64(in.Config.Resources.MemoryMib)
	if short := slot.Shortfall(f.CapacityMiB, f.InUseMiB, need); short > 0 {
		return 0, slot.WaitingMessage(short)
	}
	if !f.HasSlot {
		if f.NoSlot != "" {
			return 0, f.NoSlot
		}
		return 0, "waiting to be started: it has no slot yet"
	}
	return need, ""
}
