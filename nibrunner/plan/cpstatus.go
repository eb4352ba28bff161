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

// JobWhy is why the report of a checkpoint or an export says what it
// says: a typed reason, which plan/explain words from JobReason's facts.
type JobWhy int

// The reasons of a checkpoint's or an export's report.
const (
	// JobSaysNothing: there is nothing to say.
	JobSaysNothing JobWhy = iota
	// JobFailed: its job failed (Job) and waits for its retry.
	JobFailed
	// JobVolumeComing: its volume is the document's (volumes[Index]) and
	// is being made; Failure says why its last making failed, if it did.
	JobVolumeComing
	// JobVolumeAbsent: the document asks its volume absent
	// (volumes[Index]).
	JobVolumeAbsent
	// JobVolumeDeleted: this host deleted its volume and the document
	// does not list it.
	JobVolumeDeleted
	// JobVolumeUnknown: neither the document nor the host has its volume.
	JobVolumeUnknown
)

var jobWhyNames = [...]string{"nothing", "job failed", "volume coming", "volume asked absent", "volume deleted", "volume unknown"}

func (w JobWhy) String() string { return enumName(jobWhyNames[:], int(w), "JobWhy") }

// JobReason is why a checkpoint's or an export's report says what it
// says, with the facts its sentence names.
type JobReason struct {
	Why JobWhy
	// Job is the failed job (JobFailed).
	Job JobFacts
	// VolumeID is the volume it reads, App the app an export names ("" for
	// a checkpoint), Index the volume's place in the document's volumes,
	// Failure why the volume's making failed (JobVolumeComing).
	VolumeID, App string
	Index         int
	Failure       string
}

// CheckpointReport is a checkpoint's report as the planner decides it:
// the checkpoint, with no Message, and why (explain words it).
type CheckpointReport struct {
	reported.Checkpoint
	Why JobReason
}

// ExportReport is an export's report as the planner decides it: the
// export, with no Message, and why (explain words it).
type ExportReport struct {
	reported.Export
	Why JobReason
}

// CheckpointStatus decides what the report says of checkpoint c of doc
// (asked present): ready once it exists; failed while the job that makes
// it failed and waits for its retry; otherwise pending, unless its volume
// is missing, which waits while the document asks for the volume and
// fails when nothing in it ever will make the volume (volumeMissing).
func CheckpointStatus(doc *desired.HostDesiredState, c desired.DesiredCheckpoint, f CheckpointFacts) CheckpointReport {
	rc := CheckpointReport{Checkpoint: reported.Checkpoint{CheckpointId: c.CheckpointId, VolumeId: c.VolumeId, State: reported.CheckpointPending}}
	switch {
	case f.Exists:
		at := f.ReadyAt
		rc.State, rc.Reference, rc.ReadyAt = reported.CheckpointReady, f.Reference, &at
		rc.ObjectKey, rc.Digest = desired.ObjectKey(f.Key), desired.Sha256Digest(f.Digest)
		return rc
	case f.Create.Failed:
		rc.State, rc.Why = reported.CheckpointFailed, JobReason{Why: JobFailed, Job: f.Create}
	}
	if !f.Volume.There && rc.State == reported.CheckpointPending {
		rc.State, rc.Why = judgeMissing(doc, string(c.VolumeId), "", f.Volume, reported.CheckpointFailed, rc.State)
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
func ExportStatus(doc *desired.HostDesiredState, e desired.DesiredExport, f ExportFacts) ExportReport {
	re := ExportReport{Export: reported.Export{ExportId: e.ExportId, State: reported.ExportPending}}
	switch {
	case f.Exists:
		at := f.ReadyAt
		re.State, re.SizeBytes, re.ReadyAt = reported.ExportReady, f.SizeBytes, &at
		return re
	case f.Write.Running:
		re.State = reported.ExportPreparing
	case f.Write.Failed:
		re.State, re.Why = reported.ExportFailed, JobReason{Why: JobFailed, Job: f.Write}
	}
	if !f.Volume.There && re.State == reported.ExportPending {
		re.State, re.Why = judgeMissing(doc, string(e.VolumeId), string(e.AppId), f.Volume, reported.ExportFailed, re.State)
	}
	return re
}

// judgeMissing is the state (failed, or pending as it was) and the
// reason of a pending checkpoint or export whose volume the host lacks
// (volumeMissing).
func judgeMissing[S ~string](doc *desired.HostDesiredState, id, app string, v VolumeOf, failed, pending S) (S, JobReason) {
	bad, why := volumeMissing(doc, id, app, v)
	if bad {
		return failed, why
	}
	return pending, why
}

// volumeMissing judges a checkpoint or export of volume id, which this
// host does not have (v.Deleted: it had it and deleted it), for app
// (empty for a checkpoint, which names none): whether it is failed rather
// than pending, and why. The host makes a volume only when the document
// lists it present, so the entry waits (pending) while the document does
// (with why its making failed, when v.Failure says), and otherwise
// nothing in this document will ever make the volume: it is failed. It
// is judged again with every document, so one that lists the volume
// makes it pending.
func volumeMissing(doc *desired.HostDesiredState, id, app string, v VolumeOf) (bool, JobReason) {
	r := JobReason{VolumeID: id, App: app}
	for i, dv := range doc.Volumes {
		if string(dv.VolumeId) != id {
			continue
		}
		r.Index = i
		if dv.DesiredState == desired.Present {
			r.Why, r.Failure = JobVolumeComing, v.Failure
			return false, r
		}
		r.Why = JobVolumeAbsent
		return true, r
	}
	if v.Deleted {
		r.Why = JobVolumeDeleted
		return true, r
	}
	r.Why = JobVolumeUnknown
	return true, r
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
