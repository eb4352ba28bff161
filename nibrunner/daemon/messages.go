package daemon

// The sentences the daemon says of an app in reported.json and in a wake's
// answer, where they are fixed words rather than built from a plan.

const (
	// msgWokenCold is the report's word on an app whose wake found its
	// snapshot unusable: the VMM booted it cold and dropped the snapshot.
	msgWokenCold = "woken by a cold boot: its memory snapshot could not be restored and was dropped, so what the guest held in memory is lost; its volume is as the guest left it"
	// msgSnapshotDropped follows why a wake of a snapshot failed.
	msgSnapshotDropped = "; its memory snapshot was dropped and it is booted again from its volume"
)
