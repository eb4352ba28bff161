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

// volumeWorkMessage says how the work in flight on a volume goes.
func volumeWorkMessage(w VolumeWork, now time.Time) string {
	since := RoundDuration(now.Sub(w.Since)).Round(time.Second)
	switch w.Kind {
	case Grow:
		return fmt.Sprintf("being grown to %s (for %s): its guests are down until it is", bytesText(w.SizeBytes), since)
	case Teardown:
		return fmt.Sprintf("being deleted (for %s)", since)
	}
	s := "being made"
	if w.Phase == SeedQueued {
		return s + fmt.Sprintf(" (for %s): waiting for a turn, behind other volumes' work", since)
	}
	if !w.Seeding {
		return s + fmt.Sprintf(" (for %s)", since)
	}
	s += fmt.Sprintf(" from initialContents %q (for %s): ", w.ObjectKey, since)
	switch w.Phase {
	case SeedFetching:
		s += "fetching the archive, " + fetchedText(w)
	case SeedUnpacking:
		s += fmt.Sprintf("unpacking the archive (%s fetched), %s of files unpacked", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Unpacked)))
	case SeedFormatting:
		s += fmt.Sprintf("writing the filesystem (%s fetched, %s of files unpacked)", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Unpacked)))
	}
	if e := w.Earlier; e != nil {
		at := e.StartedAt.UTC().Format(time.RFC3339)
		if e.Resumed {
			s += fmt.Sprintf("; resumed: an attempt begun at %s was interrupted by a restart after fetching the whole archive (%s), which is unpacked without fetching it again", at, bytesText(uint64(e.Fetched)))
		} else {
			s += fmt.Sprintf("; restarted: an attempt begun at %s was interrupted by a restart after fetching %s, and the archive is fetched again from the start (the store is read whole, not resumed)", at, bytesText(uint64(e.Fetched)))
		}
	}
	return s
}

// fetchedText is how much of the archive is fetched, of how much.
func fetchedText(w VolumeWork) string {
	if w.Total <= 0 {
		return bytesText(uint64(w.Fetched)) + " so far"
	}
	return fmt.Sprintf("%s of %s (%d%%)", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Total)), w.Fetched*100/w.Total)
}

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

// VolumeActionMessage is the sentence the report gives a volume whose
// action a only says something: a teardown held back (Blocked), a shrink
// refused (the volume is have bytes, the document asks for asked), no
// room on the disk (NoDisk).
func VolumeActionMessage(a VolumeAction, have, asked uint64) string {
	switch a.Kind {
	case Blocked:
		return fmt.Sprintf("asked absent but held back: app %s still uses it; it is deleted once no instance in the document names it", a.By)
	case RefuseShrink:
		return fmt.Sprintf("a volume only grows: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", have, asked, have)
	case NoDisk:
		return NoDiskMessage(a)
	}
	return ""
}

// VolumeFailedMessage is the sentence the report gives a volume whose
// action a (asking for asked bytes) failed with why; it is tried again at.
func VolumeFailedMessage(a VolumeAction, asked uint64, at time.Time, why string) string {
	what := "could not be made"
	switch a.Kind {
	case Teardown:
		what = "could not be deleted"
	case Grow:
		what = fmt.Sprintf("could not be grown to %d bytes", asked)
	}
	return what + " (tried again at " + at.UTC().Format(time.RFC3339) + "): " + why
}

// NoDiskMessage is the sentence the report gives a volume NoDisk held back.
func NoDiskMessage(a VolumeAction) string {
	what := fmt.Sprintf("is not made: it is %s", bytesText(a.SizeBytes))
	if a.Tried == Grow {
		what = fmt.Sprintf("is not grown to %s: that takes %s more", bytesText(a.SizeBytes), bytesText(a.NeedBytes))
	}
	return fmt.Sprintf("volume %s %s, and the disk volumes are made on has %s free for it (its free space less what the volumes already made may still fill); it is made once there is room: free disk space, or ask for a smaller volume", a.VolumeID, what, bytesText(a.RoomBytes))
}

// bytesText is n in bytes, and in MiB or GiB when that is shorter to read.
func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", n, float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
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
