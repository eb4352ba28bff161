package plan

import (
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// JobFacts is how the background job behind a checkpoint or an export is
// doing (nibrunner/jobs' Status), as the status functions read it.
type JobFacts struct {
	// Running: the job runs now; Failed: its last run failed, after
	// Attempts runs, saying Message, and it runs again at RetryAt.
	Running, Failed bool
	Attempts        int
	RetryAt         time.Time
	Message         string
}

// VolumeOf is what the host knows of the volume a checkpoint or an export
// reads.
type VolumeOf struct {
	// There: the host holds it. Deleted: this host deleted it. Failure is
	// the report's sentence when its making failed.
	There, Deleted bool
	Failure        string
}

// CheckpointFacts is what the host knows of one checkpoint.
type CheckpointFacts struct {
	// Exists: it was made, as Reference, at ReadyAt.
	Exists    bool
	Reference string
	ReadyAt   time.Time
	// Key and Digest are its object's key and sha-256, when known.
	Key, Digest string
	// Create is how the job that makes it is doing.
	Create JobFacts
	Volume VolumeOf
}

// CheckpointStatus decides what the report says of checkpoint c of doc
// (asked present) at now: ready once it exists; failed while the job that
// makes it failed and waits for its retry; otherwise pending, unless its
// volume is missing, which waits while the document asks for the volume
// and fails when nothing in it ever will make the volume (volumeMissing).
func CheckpointStatus(doc *desired.HostDesiredState, c desired.DesiredCheckpoint, f CheckpointFacts, now time.Time) reported.Checkpoint {
	rc := reported.Checkpoint{CheckpointId: c.CheckpointId, VolumeId: c.VolumeId, State: reported.CheckpointPending}
	switch {
	case f.Exists:
		at := f.ReadyAt
		rc.State, rc.Reference, rc.ReadyAt = reported.CheckpointReady, f.Reference, &at
		rc.ObjectKey, rc.Digest = desired.ObjectKey(f.Key), desired.Sha256Digest(f.Digest)
		return rc
	case f.Create.Failed:
		rc.State, rc.Message = reported.CheckpointFailed, jobMessage("could not be made", f.Create, now)
	}
	if !f.Volume.There && rc.State == reported.CheckpointPending {
		rc.State, rc.Message = judgeMissing(doc, "checkpoint", string(c.VolumeId), "", f.Volume, reported.CheckpointFailed, rc.State)
	}
	return rc
}

// ExportFacts is what the host knows of one export.
type ExportFacts struct {
	// Exists: it was written, SizeBytes big, at ReadyAt.
	Exists    bool
	SizeBytes uint64
	ReadyAt   time.Time
	// Write is how the job that writes it is doing.
	Write  JobFacts
	Volume VolumeOf
}

// ExportStatus decides what the report says of export e of doc (asked
// present) at now: ready once written; preparing while its job runs;
// failed while the job failed and waits for its retry; otherwise pending,
// unless its volume is missing (as CheckpointStatus).
func ExportStatus(doc *desired.HostDesiredState, e desired.DesiredExport, f ExportFacts, now time.Time) reported.Export {
	re := reported.Export{ExportId: e.ExportId, State: reported.ExportPending}
	switch {
	case f.Exists:
		at := f.ReadyAt
		re.State, re.SizeBytes, re.ReadyAt = reported.ExportReady, f.SizeBytes, &at
		return re
	case f.Write.Running:
		re.State = reported.ExportPreparing
	case f.Write.Failed:
		re.State, re.Message = reported.ExportFailed, jobMessage("could not be written", f.Write, now)
	}
	if !f.Volume.There && re.State == reported.ExportPending {
		re.State, re.Message = judgeMissing(doc, "export", string(e.VolumeId), string(e.AppId), f.Volume, reported.ExportFailed, re.State)
	}
	return re
}

// judgeMissing is the state (failed, or pending as it was) and the
// sentence of a pending checkpoint or export whose volume the host lacks
// (volumeMissing).
func judgeMissing[S ~string](doc *desired.HostDesiredState, what, id, app string, v VolumeOf, failed, pending S) (S, string) {
	bad, msg := volumeMissing(doc, what, id, app, v)
	if bad {
		return failed, msg
	}
	return pending, msg
}

// ExportsToCancel is the rule that exports are authoritative, for the
// writes in flight: a write of an export (by id, among running) that the
// document no longer asks present, dropped or asked absent, is cancelled.
func ExportsToCancel(doc *desired.HostDesiredState, running []string) []string {
	present := make(map[string]bool, len(doc.Exports))
	for _, e := range doc.Exports {
		if e.DesiredState == desired.Present {
			present[string(e.ExportId)] = true
		}
	}
	var out []string
	for _, id := range running {
		if !present[id] {
			out = append(out, id)
		}
	}
	return out
}
