package plan

import (
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
)

// VolumeRetry spaces the attempts of a volume action that keeps failing (a
// seed that cannot be unpacked, mke2fs failing): the first retry 2 s after
// the failure, doubling up to 5 minutes. Without it a failure was tried
// again at every pass, and a zip-bomb seed cost a second of CPU each time.
var VolumeRetry = backoff.Policy{Initial: 2 * time.Second, Max: 5 * time.Minute, Factor: 2}

// VolumeFailure is what the daemon remembers of the last volume action that
// failed: what was tried, how many times in a row, and when last.
type VolumeFailure struct {
	Kind      VolumeKind
	SizeBytes uint64
	// Seed is the digest of the initialContents tried ("" for none).
	Seed  string
	Count int
	At    time.Time
}

// SeedOf is the digest of v's initialContents, "" for none: a failure is
// of one attempt, and a document that asks for another seed is a new one.
func SeedOf(v desired.DesiredVolume) string {
	if v.InitialContents == nil {
		return ""
	}
	return string(v.InitialContents.Digest)
}

// gateVolumes holds back the volume actions that may not run this pass:
// one whose same attempt failed and whose backoff is not over (RetryLater,
// with when it is), and a provision or grow the disk has no room for
// (NoDisk). Room is the free space less what the volumes already on the
// host may still fill (their size less what they hold), as memory is
// admitted against what the guests up may use; each admitted action takes
// its share, in id order. It returns the earliest retry.
func gateVolumes(acts []VolumeAction, doc *desired.HostDesiredState, obs Observed) ([]VolumeAction, time.Time) {
	want := make(map[string]desired.DesiredVolume, len(doc.Volumes))
	for _, v := range doc.Volumes {
		want[string(v.VolumeId)] = v
	}
	room, known := diskRoom(obs)
	var retry time.Time
	for i := range acts {
		a := &acts[i]
		if a.Kind != Provision && a.Kind != Grow && a.Kind != Teardown {
			continue
		}
		if f, ok := obs.VolumeFailures[a.VolumeID]; ok && f.Kind == a.Kind && f.SizeBytes == a.SizeBytes && f.Seed == SeedOf(want[a.VolumeID]) {
			at := f.At.Add(VolumeRetry.Delay(f.Count))
			if obs.Now.Before(at) {
				a.Tried, a.Kind, a.RetryAt, a.Failures = a.Kind, RetryLater, at, f.Count
				if retry.IsZero() || at.Before(retry) {
					retry = at
				}
				continue
			}
		}
		if a.Kind == Teardown || !known {
			continue
		}
		need := a.SizeBytes
		if a.Kind == Grow {
			need -= min(obs.Volumes[a.VolumeID].SizeBytes, need)
		}
		if need > room {
			a.Tried, a.Kind, a.NeedBytes, a.RoomBytes = a.Kind, NoDisk, need, room
			continue
		}
		room -= need
	}
	return acts, retry
}

// diskRoom is the space a new volume may take: the free space on the disk
// volumes are made on, less what the volumes there may still fill.
func diskRoom(obs Observed) (uint64, bool) {
	if obs.DiskFree == nil {
		return 0, false
	}
	room := *obs.DiskFree
	for _, v := range obs.Volumes {
		if v.SizeBytes > v.AllocatedBytes {
			room -= min(v.SizeBytes-v.AllocatedBytes, room)
		}
	}
	return room, true
}

// GiveUpMaking reports whether the making of a volume in flight, planned
// on planned (the volume as the document it was planned on listed it), is
// given up now that doc is in force: doc no longer names the volume, asks
// it absent, or asks it made from other initialContents. A seed of gigabytes
// for a volume nobody asks for would otherwise run for its whole budget
// (hours) and leave its archive behind. Another size alone does not give
// it up: the volume made is grown, or its shrink refused, by the next plan.
func GiveUpMaking(doc *desired.HostDesiredState, planned desired.DesiredVolume) bool {
	if doc == nil {
		return false // no document in force: the host changes nothing
	}
	for _, v := range doc.Volumes {
		if v.VolumeId == planned.VolumeId {
			return v.DesiredState != desired.Present || !sameContents(v.InitialContents, planned.InitialContents)
		}
	}
	return true
}

func sameContents(a, b *desired.InitialContents) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
