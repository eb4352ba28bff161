package daemon

import "fmt"

// The sentences the daemon says of an app in reported.json and in a wake's
// answer, where they are fixed words rather than built from a plan.

const (
	// msgWokenCold is the report's word on an app whose wake found its
	// snapshot unusable: the VMM booted it cold and dropped the snapshot.
	msgWokenCold = "woken by a cold boot: its memory snapshot could not be restored and was dropped, so what the guest held in memory is lost; its volume is as the guest left it"
	// msgSnapshotDropped follows why a wake of a snapshot failed.
	msgSnapshotDropped = "; its memory snapshot was dropped and it is booted again from its volume"
)

// A wake's answers are "wake APP: " and why it did not bring the app up.

// wakeRefused is a wake's answer for app when why is a sentence: the
// planner's refusal, the guest's failure, why its start is held back.
func wakeRefused(app, why string) error { return fmt.Errorf("wake %s: %s", app, why) }

// wakeFailed is a wake's answer for app when err is what ended it (the
// daemon closing, the caller's context, an app that is not running); the
// answer wraps err, so callers can tell which.
func wakeFailed(app string, err error) error { return fmt.Errorf("wake %s: %w", app, err) }
