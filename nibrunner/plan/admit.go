package plan

import (
	"alpnib.dev/nibrunner/desired"
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
	// InUseMiB is the memory given to every guest up and every start in
	// flight; CapacityMiB what guests may use.
	InUseMiB, CapacityMiB uint64
	// HeldMiB is what those guests hold of the host: each QEMU's measured
	// share, or its given memory until it is measured (a start in flight
	// counts its whole size).
	HeldMiB uint64
	// Overcommit is how many times CapacityMiB the given memory may reach
	// ([admission] memory_overcommit; below 1 counts as 1). Above 1, what
	// guests hold must also fit in CapacityMiB; at 1 the given memory
	// alone decides, as before the ratio existed.
	Overcommit float64
	// Sleepers are the guests that may be put to sleep to make room;
	// FreeingGivenMiB and FreeingHeldMiB are the memory of guests going to
	// sleep or down already, which will make room without another sleep.
	Sleepers                        []Sleeper
	FreeingGivenMiB, FreeingHeldMiB uint64
	// HasSlot: the app holds a slot; NoSlot is why not, when assigning one
	// failed this pass (every slot taken, the slot not recorded).
	HasSlot bool
	NoSlot  string
}

// AdmitWhy is why the start gate holds a start back: a typed reason,
// which plan/explain words from AdmitReason's facts.
type AdmitWhy int

// The start gate's reasons, in the order its gates are tried.
const (
	// Admitted: every gate is open.
	Admitted AdmitWhy = iota
	// WaitNetwork: the host network rules are not in place (Text: why).
	WaitNetwork
	// WaitVolume: the instance's volume (VolumeID) is not ready (Text:
	// why, "" when it is not made yet).
	WaitVolume
	// WaitMemoryGiven: the memory given to guests leaves ShortMiB too
	// little.
	WaitMemoryGiven
	// WaitMemoryHeld: the guests hold HeldMiB of the CapacityMiB they
	// may, ShortMiB too much.
	WaitMemoryHeld
	// WaitSlot: it has no slot (Text: the allocator's sentence, "" when
	// none was tried).
	WaitSlot
)

var admitWhyNames = [...]string{"admitted", "network", "volume", "memory given", "memory held", "slot"}

func (w AdmitWhy) String() string { return enumName(admitWhyNames[:], int(w), "AdmitWhy") }

// AdmitReason is why the start gate holds a start back, with the facts
// its sentence names.
type AdmitReason struct {
	Why                            AdmitWhy
	Text, VolumeID                 string
	ShortMiB, HeldMiB, CapacityMiB uint64
	// RoomComing: short of memory, the guests already going to sleep or
	// down make the room, so none other is put to sleep.
	RoomComing bool
}

// Admission is the start gate's answer.
type Admission struct {
	// NeedMiB is the memory the guest will be given, when admitted.
	NeedMiB uint64
	// Why is why the start waits for a later pass (Admitted: it does
	// not); plan/explain words it for the report.
	Why AdmitReason
	// Sleep are the apps to put to sleep now so that the start fits at a
	// later pass (set only when held back).
	Sleep []string
}

// Admitted tells whether the start may go ahead.
func (a Admission) Admitted() bool { return a.Why.Why == Admitted }

// Admit is the start gate: whether a start of in may go ahead now, given
// f. The first gate that is shut says why: the network rules, the volume,
// memory, a slot. Short of memory, the longest-idle guests on request that
// together make room are named to be put to sleep.
func Admit(in *desired.DesiredInstance, f StartFacts) Admission {
	switch {
	case !f.NetworkReady:
		return Admission{Why: AdmitReason{Why: WaitNetwork, Text: f.NetworkErr}}
	case !f.VolumeReady:
		return Admission{Why: AdmitReason{Why: WaitVolume, VolumeID: string(in.VolumeId), Text: f.VolumeErr}}
	}
	need := uint64(in.Config.Resources.MemoryMib)
	if given, held := memoryShort(f, need); given > 0 || held > 0 {
		why := AdmitReason{Why: WaitMemoryGiven, ShortMiB: max(given, held)}
		if held > given {
			why = AdmitReason{Why: WaitMemoryHeld, ShortMiB: held, HeldMiB: f.HeldMiB, CapacityMiB: f.CapacityMiB}
		}
		// Room is made for the whole excess, which is more than the
		// shortfall the sentence names when the host is already over.
		given, held = excess(f.InUseMiB+need, givenCap(f)), 0
		if max(f.Overcommit, 1) > 1 {
			held = excess(f.HeldMiB+need, f.CapacityMiB)
		}
		given, held = given-min(given, f.FreeingGivenMiB), held-min(held, f.FreeingHeldMiB)
		if given == 0 && held == 0 {
			why.RoomComing = true
			return Admission{Why: why}
		}
		return Admission{Why: why, Sleep: MakeRoom(given, held, f.Sleepers)}
	}
	if !f.HasSlot {
		return Admission{Why: AdmitReason{Why: WaitSlot, Text: f.NoSlot}}
	}
	return Admission{NeedMiB: need}
}

// memoryShort is how many MiB a start of need MiB misses of given memory
// (against the capacity times the overcommit ratio) and of held memory
// (against the capacity itself, only when overcommitting).
func memoryShort(f StartFacts, need uint64) (given, held uint64) {
	given = shortfall(givenCap(f), f.InUseMiB, need)
	if max(f.Overcommit, 1) > 1 {
		held = shortfall(f.CapacityMiB, f.HeldMiB, need)
	}
	return given, held
}

// givenCap is what the memory given to guests may add up to.
func givenCap(f StartFacts) uint64 {
	return uint64(float64(f.CapacityMiB) * max(f.Overcommit, 1))
}

func excess(n, limit uint64) uint64 {
	if n <= limit {
		return 0
	}
	return n - limit
}

// shortfall returns how many MiB short the host is of admitting a start
// that needs need MiB, when capacity MiB are usable and inUse MiB are held
// by everything up or starting; 0 means it is admitted.
func shortfall(capacity, inUse, need uint64) uint64 {
	if inUse+need <= capacity {
		return 0
	}
	if inUse >= capacity {
		return need
	}
	return inUse + need - capacity
}
