package plan

import (
	"iter"
	"sort"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// SeedPhase is how far a volume being made has come.
type SeedPhase int

// The phases of making a volume, in order (nibrunner/volume's Phase).
const (
	// SeedQueued: the work waits for a turn among the volume workers.
	SeedQueued SeedPhase = iota
	SeedFetching
	SeedUnpacking
	SeedFormatting
)

// EarlierSeed is what an attempt to seed a volume that never ended (a
// restart interrupted it) left, as the attempt under way found it.
type EarlierSeed struct {
	StartedAt time.Time
	// Fetched is how much of the archive it had fetched.
	Fetched int64
	// Resumed: its archive was whole, so this attempt unpacks it without
	// fetching it again; otherwise this attempt fetches from the start.
	Resumed bool
}

// VolumeWork is a volume action in flight on the volume's worker.
type VolumeWork struct {
	// Kind is Provision, Grow or Teardown; "" when nothing is in flight.
	Kind VolumeKind
	// SizeBytes is the size asked for; Since when the work was handed out.
	SizeBytes uint64
	Since     time.Time
	// Seeding: the volume is made from initialContents (ObjectKey).
	Seeding   bool
	ObjectKey string
	// Phase, and the archive's bytes Fetched of Total (0 until the store
	// announced it) and the file bytes Unpacked.
	Phase                    SeedPhase
	Fetched, Total, Unpacked int64
	// Earlier is what an interrupted attempt left, nil when none did.
	Earlier *EarlierSeed
}

// VolumeFacts is what the host knows of one volume besides the document.
type VolumeFacts struct {
	// Listed: the host's listing holds it, SizeBytes big, at DevicePath.
	Listed     bool
	SizeBytes  uint64
	DevicePath string
	// Message is what the last action on it said (a refused shrink, a
	// teardown held back, a failure with its retry), "" for nothing.
	Message string
	// Deleted: this host deleted it on an explicit absent, when it was
	// DeletedSizeBytes big, for DeletedApp.
	Deleted          bool
	DeletedSizeBytes uint64
	DeletedApp       string
	// Usage is its fill as last measured, nil when unknown.
	Usage *reported.Usage
	// Work is the action in flight on it.
	Work VolumeWork
}

// VolumeStatus decides what the report says of volume v of the document,
// from what the host knows of it f (explain.VolumeStatus words it). The
// first rule that holds wins:
//   - on the host: ready, at its size, unless what was last done to it
//     failed while it is wanted present (failed, saying why); a grow or a
//     deletion under way says so;
//   - asked absent: deleted (at the size it had, when this host deleted it);
//   - being made: pending, saying how far the making has come (and, when a
//     restart interrupted an earlier attempt, whether this one resumed it
//     or started again);
//   - its making failed: failed, saying why;
//   - otherwise pending.
func VolumeStatus(v desired.DesiredVolume, f VolumeFacts) VolumeReport {
	rv := reported.Volume{VolumeId: v.VolumeId, AppId: v.AppId, SizeBytes: RoundSize(v.SizeBytes)}
	atWork := false
	switch {
	case f.Listed:
		rv.State, rv.SizeBytes, rv.DevicePath, rv.Usage = reported.VolumeReady, f.SizeBytes, f.DevicePath, f.Usage
		switch {
		case f.Work.Kind == Grow || f.Work.Kind == Teardown:
			atWork = true
		case f.Message != "":
			rv.Message = f.Message
			if v.DesiredState == desired.Present {
				rv.State = reported.VolumeFailed
			}
		}
	case v.DesiredState == desired.Absent:
		rv.State = reported.VolumeDeleted
		if f.Deleted {
			rv.SizeBytes = f.DeletedSizeBytes
		}
	case f.Work.Kind == Provision:
		rv.State, atWork = reported.VolumePending, true
	case f.Message != "":
		rv.State, rv.Message = reported.VolumeFailed, f.Message
	default:
		rv.State = reported.VolumePending
	}
	rv.Message = reported.Truncate(rv.Message)
	return VolumeReport{Volume: rv, AtWork: atWork}
}

// VolumeReport is what the report says of one volume, as the planner
// decides it. Message holds only a sentence passed on (what the last
// action said); AtWork says that the report tells instead how the work
// in flight goes, which plan/explain words from the facts' Work.
type VolumeReport struct {
	reported.Volume
	AtWork bool
}

// UnlistedVolumes says what the report says of the volumes the document
// does not name (by id in facts; app is the app a document last named each
// for): one on the host is detached, kept until a document asks for it
// absent; one this host deleted is deleted. Sorted by id.
func UnlistedVolumes(doc *desired.HostDesiredState, facts iter.Seq2[string, VolumeFacts], app func(id string) string) []reported.Volume {
	named := make(map[string]bool, len(doc.Volumes))
	for _, v := range doc.Volumes {
		named[string(v.VolumeId)] = true
	}
	var out []reported.Volume
	for id, f := range facts {
		switch {
		case named[id]:
		case f.Listed:
			out = append(out, reported.Volume{VolumeId: desired.VolumeId(id), AppId: desired.AppId(app(id)), State: reported.VolumeDetached,
				SizeBytes: f.SizeBytes, DevicePath: f.DevicePath, Message: msgVolumeDetached})
		case f.Deleted:
			out = append(out, reported.Volume{VolumeId: desired.VolumeId(id), AppId: desired.AppId(f.DeletedApp), State: reported.VolumeDeleted, SizeBytes: f.DeletedSizeBytes})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VolumeId < out[j].VolumeId })
	return out
}

// GrowTakesDown is the grow rule: growing is offline, so a grow of volume
// id takes down every guest up on it (with nothing else in flight on its
// app, whose worker would race the grow), and the next plan starts them
// again on the bigger volume. Sorted by app.
func GrowTakesDown(id string, instances map[string]Instance) []string {
	var out []string
	for app, o := range instances {
		if o.VolumeID == id && o.VM == Up && !o.Acting {
			out = append(out, app)
		}
	}
	sort.Strings(out)
	return out
}
