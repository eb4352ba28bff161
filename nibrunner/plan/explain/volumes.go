package explain

import (
	"fmt"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/reported"
)

// A volume's sentences: how its work in flight goes, why an action on it
// only says something, why one failed, and why the disk has no room.

// VolumeStatus is the report of volume v of the document, as the planner
// decides it (plan.VolumeStatus) from f at now, in words: when the
// planner says the work in flight is what to tell, the sentence of how
// it goes.
func VolumeStatus(v desired.DesiredVolume, f plan.VolumeFacts, now time.Time) reported.Volume {
	r := plan.VolumeStatus(v, f)
	if r.AtWork {
		r.Message = reported.Truncate(VolumeWork(f.Work, now))
	}
	return r.Volume
}

// VolumeHoldsBack is why an instance on a volume with work w in flight is
// not started now ("" when nothing is in flight): its volume is being
// made, grown or deleted, and the guest starts on it once that is done.
func VolumeHoldsBack(w plan.VolumeWork, now time.Time) string {
	if w.Kind == "" {
		return ""
	}
	return VolumeWork(w, now)
}

// VolumeWork says how the work w in flight on a volume goes at now.
func VolumeWork(w plan.VolumeWork, now time.Time) string {
	since := plan.RoundDuration(now.Sub(w.Since)).Round(time.Second)
	switch w.Kind {
	case plan.Grow:
		return fmt.Sprintf("being grown to %s (for %s): its guests are down until it is", bytesText(w.SizeBytes), since)
	case plan.Teardown:
		return fmt.Sprintf("being deleted (for %s)", since)
	}
	s := "being made"
	if w.Phase == plan.SeedQueued {
		return s + fmt.Sprintf(" (for %s): waiting for a turn, behind other volumes' work", since)
	}
	if !w.Seeding {
		return s + fmt.Sprintf(" (for %s)", since)
	}
	s += fmt.Sprintf(" from initialContents %q (for %s): ", w.ObjectKey, since)
	switch w.Phase {
	case plan.SeedFetching:
		s += "fetching the archive, " + fetchedText(w)
	case plan.SeedUnpacking:
		s += fmt.Sprintf("unpacking the archive (%s fetched), %s of files unpacked", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Unpacked)))
	case plan.SeedFormatting:
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
func fetchedText(w plan.VolumeWork) string {
	if w.Total <= 0 {
		return bytesText(uint64(w.Fetched)) + " so far"
	}
	return fmt.Sprintf("%s of %s (%d%%)", bytesText(uint64(w.Fetched)), bytesText(uint64(w.Total)), w.Fetched*100/w.Total)
}

// VolumeActionMessage is the sentence the report gives a volume whose
// action a only says something: a teardown held back (Blocked), a shrink
// refused (the volume is have bytes, the document asks for asked), no
// room on the disk (NoDisk).
func VolumeActionMessage(a plan.VolumeAction, have, asked uint64) string {
	switch a.Kind {
	case plan.Blocked:
		return fmt.Sprintf("asked absent but held back: app %s still uses it; it is deleted once no instance in the document names it", a.By)
	case plan.RefuseShrink:
		return fmt.Sprintf("a volume only grows: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", have, asked, have)
	case plan.NoDisk:
		return NoDiskMessage(a)
	}
	return ""
}

// VolumeFailedMessage is the sentence the report gives a volume whose
// action a (asking for asked bytes) failed with why; it is tried again at.
func VolumeFailedMessage(a plan.VolumeAction, asked uint64, at time.Time, why string) string {
	what := "could not be made"
	switch a.Kind {
	case plan.Teardown:
		what = "could not be deleted"
	case plan.Grow:
		what = fmt.Sprintf("could not be grown to %d bytes", asked)
	}
	return what + " (tried again at " + at.UTC().Format(time.RFC3339) + "): " + why
}

// NoDiskMessage is the sentence the report gives a volume NoDisk held back.
func NoDiskMessage(a plan.VolumeAction) string {
	what := fmt.Sprintf("is not made: it is %s", bytesText(a.SizeBytes))
	if a.Tried == plan.Grow {
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

// CheckpointStatus is the report of checkpoint c of doc, as the planner
// decides it (plan.CheckpointStatus) from f, in words at now.
func CheckpointStatus(doc *desired.HostDesiredState, c desired.DesiredCheckpoint, f plan.CheckpointFacts, now time.Time) reported.Checkpoint {
	r := plan.CheckpointStatus(doc, c, f)
	r.Message = JobSays(r.Why, "checkpoint", "could not be made", now)
	return r.Checkpoint
}

// ExportStatus is the report of export e of doc, as the planner decides
// it (plan.ExportStatus) from f, in words at now.
func ExportStatus(doc *desired.HostDesiredState, e desired.DesiredExport, f plan.ExportFacts, now time.Time) reported.Export {
	r := plan.ExportStatus(doc, e, f)
	r.Message = JobSays(r.Why, "export", "could not be written", now)
	return r.Export
}

// JobSays is the sentence of r for a checkpoint or an export (what),
// whose job's failure is said as failed ("could not be made"), at now.
func JobSays(r plan.JobReason, what, failed string, now time.Time) string {
	id, i := r.VolumeID, r.Index
	switch r.Why {
	case plan.JobFailed:
		j := r.Job
		return reported.Truncate(fmt.Sprintf("%s (attempt %d; the next try is in %s): %s", failed, j.Attempts, plan.RoundDuration(max(j.RetryAt.Sub(now), 0)), j.Message))
	case plan.JobVolumeComing:
		if r.Failure != "" {
			return reported.Truncate(fmt.Sprintf("waiting for volume %s to be made (volumes[%d]), which failed: %s", id, i, r.Failure))
		}
		return fmt.Sprintf("waiting for volume %s to be made (volumes[%d])", id, i)
	case plan.JobVolumeAbsent:
		return fmt.Sprintf("volume %s is asked absent (volumes[%d].desiredState), so there is nothing to %s: ask for it present, or point this %s at a volume the host holds", id, i, what, what)
	case plan.JobVolumeDeleted:
		return fmt.Sprintf("volume %s was deleted from this host and this document does not list it, so there is nothing to %s: point this %s at a volume the host holds, or drop it", id, what, what)
	case plan.JobVolumeUnknown:
		forApp := ""
		if r.App != "" {
			forApp = " with appId " + r.App
		}
		return fmt.Sprintf("volume %s is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes%s, or point this %s at a volume the host holds", id, forApp, what)
	}
	return ""
}
