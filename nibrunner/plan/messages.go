package plan

import (
	"fmt"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// The sentences the planner's status functions say, in one place.

// msgVolumeDetached is a volume on the host that no document names.
const msgVolumeDetached = "the document no longer names this volume; it is kept until a document asks for it absent"

// jobMessage is the sentence a failed checkpoint's or export's job is
// reported with: what failed, its attempt, when it is tried again, why.
func jobMessage(what string, j JobFacts, now time.Time) string {
	return reported.Truncate(fmt.Sprintf("%s (attempt %d; the next try is in %s): %s", what, j.Attempts, RoundDuration(max(j.RetryAt.Sub(now), 0)), j.Message))
}

// volumeMissing judges a checkpoint or export (what) of volume id, which
// this host does not have (v.Deleted: it had it and deleted it), for app
// (empty for a checkpoint, which names none): whether it is failed rather
// than pending, and the sentence. The host makes a volume only when the
// document lists it present, so the entry waits (pending) while the
// document does (saying why its making failed, when v.Failure says), and
// otherwise nothing in this document will ever make the volume: it is
// failed, saying what to change. It is judged again with every document,
// so one that lists the volume makes it pending.
func volumeMissing(doc *desired.HostDesiredState, what, id, app string, v VolumeOf) (bool, string) {
	for i, dv := range doc.Volumes {
		if string(dv.VolumeId) != id {
			continue
		}
		if dv.DesiredState == desired.Present {
			if v.Failure != "" {
				return false, reported.Truncate(fmt.Sprintf("waiting for volume %s to be made (volumes[%d]), which failed: %s", id, i, v.Failure))
			}
			return false, fmt.Sprintf("waiting for volume %s to be made (volumes[%d])", id, i)
		}
		return true, fmt.Sprintf("volume %s is asked absent (volumes[%d].desiredState), so there is nothing to %s: ask for it present, or point this %s at a volume the host holds", id, i, what, what)
	}
	if v.Deleted {
		return true, fmt.Sprintf("volume %s was deleted from this host and this document does not list it, so there is nothing to %s: point this %s at a volume the host holds, or drop it", id, what, what)
	}
	forApp := ""
	if app != "" {
		forApp = " with appId " + app
	}
	return true, fmt.Sprintf("volume %s is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes%s, or point this %s at a volume the host holds", id, forApp, what)
}

// What a wake answers when it has no other word: the pass it waited for
// held the app's first start back and left no note, or its start
// committed without a guest up and no failure.
const (
	MsgNoSlotYet      = "its first start was held back and it has no slot yet; the next pass tries again"
	MsgWentDownWaking = "the guest went down while waking"
)

// memoryWaitingMessage explains a start held back by memory admission.
func memoryWaitingMessage(shortMiB uint64) string {
	return fmt.Sprintf("waiting to be started: its host is %d MiB short of the memory it needs", shortMiB)
}
