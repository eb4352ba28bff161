package daemon

import (
	"context"
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// vol is everything the daemon knows about one volume, as app is for an
// app: what the last listing showed of it, the app a document named it
// for, the sentence reported for it, its last failed action, its last
// measured fill, and whether this host deleted it. One value per volume:
// forgetting a volume is deleting its entry from Daemon.volumes. Every
// field is read and written under Daemon.mu.
type vol struct {
	id string
	// info is the volume as the last listing showed it, when listed.
	info   VolumeInfo
	listed bool
	// app is the app the last document that named the volume named it
	// for, so a volume a later document drops is still reported by app.
	app string
	// msg is the sentence reported for the volume (a refused shrink, a
	// teardown held back, a failure), "" for none.
	msg string
	// failure is the volume's last failed action, which waits for its
	// backoff (plan.VolumeRetry), when failed. It is kept in the database
	// with its sentence (msg), so a restart waits for the backoff too.
	failure plan.VolumeFailure
	failed  bool
	// usage is the volume's last measured fill, when measured.
	usage    volume.Usage
	measured bool
	// deleted is what the database remembers of the volume's deletion,
	// when this host deleted it on an explicit absent.
	deleted   db.DeletedVolume
	wasDelete bool

	// busy: an action is in flight on the volume's worker (apply.go), the
	// work it was handed; turn: it holds one of the workers' turns;
	// progress is how it goes, told by the volume backend. Nothing else is
	// handed to the volume, and no guest starts on it, until it commits.
	busy     bool
	turn     bool
	work     plan.VolumeWork
	progress *volume.Progress
	// asked is the volume as the document the work was planned on listed
	// it; giveUp, set while the work has its turn, cancels it with
	// volume.ErrGivenUp when a later document no longer asks it so
	// (plan.GiveUpMaking).
	asked  desired.DesiredVolume
	giveUp context.CancelCauseFunc
	// changedAt is the commit (Daemon.seq) of its worker's last outcome:
	// a pass that listed the volumes before it keeps what the worker
	// committed rather than its listing, and hands the volume nothing
	// (stale), as app.changedAt does for an app.
	changedAt uint64
}

// stale reports whether what a pass listed of v after commit seen is out
// of date: its worker is busy, or committed since.
func (v *vol) stale(seen uint64) bool { return v.busy || v.changedAt > seen }

// volCommitted stamps v with a new commit (mu held): what a listing taken
// before it showed of v no longer holds.
func (d *Daemon) volCommitted(v *vol) {
	d.seq++
	v.changedAt = d.seq
}

// idle frees v's worker.
func (v *vol) idle() {
	v.busy, v.turn, v.work, v.progress = false, false, plan.VolumeWork{}, nil
	v.asked, v.giveUp = desired.DesiredVolume{}, nil
}

// facts is what the planner's status functions read of v.
func (v *vol) facts() plan.VolumeFacts {
	f := plan.VolumeFacts{Listed: v.listed, SizeBytes: v.info.SizeBytes, DevicePath: v.info.Path, Message: v.msg,
		Deleted: v.wasDelete, DeletedSizeBytes: v.deleted.SizeBytes, DeletedApp: v.deleted.AppID}
	if u := v.usage; v.measured {
		f.Usage = &reported.Usage{TotalBytes: u.TotalBytes, UsedBytes: u.UsedBytes, MeasuredAt: u.MeasuredAt}
	}
	if v.busy {
		f.Work = v.workNow()
	}
	return f
}

// workNow is the work in flight on v, with its progress as of now.
func (v *vol) workNow() plan.VolumeWork {
	w := v.work
	p := v.progress.Now()
	switch {
	case !v.turn:
		w.Phase = plan.SeedQueued
	case p.Phase == volume.Unpacking:
		w.Phase = plan.SeedUnpacking
	case p.Phase == volume.Formatting:
		w.Phase = plan.SeedFormatting
	default:
		w.Phase = plan.SeedFetching
	}
	w.Fetched, w.Total, w.Unpacked = p.Fetched, p.Total, p.Unpacked
	if e := p.Earlier; e != nil {
		w.Earlier = &plan.EarlierSeed{StartedAt: e.StartedAt, Fetched: e.Fetched, Resumed: e.Resumed}
	}
	return w
}

// volOf returns volume id's entry, made empty if there is none.
func (d *Daemon) volOf(id string) *vol {
	v := d.volumes[id]
	if v == nil {
		v = &vol{id: id}
		d.volumes[id] = v
	}
	return v
}

// setListing records what a listing of the host's volumes, begun after
// commit seen, showed: every volume in it is listed, every other one is
// not (and its measured fill goes with it), except a volume whose worker
// committed since, which keeps what its worker committed.
func (d *Daemon) setListing(vols map[string]VolumeInfo, seen uint64) {
	for id, v := range d.volumes {
		if v.changedAt > seen {
			continue
		}
		if info, ok := vols[id]; ok {
			v.info, v.listed = info, true
			continue
		}
		v.info, v.listed = VolumeInfo{}, false
		if v.empty() {
			delete(d.volumes, id)
		}
	}
	for id, info := range vols {
		if v := d.volumes[id]; v == nil {
			d.volumes[id] = &vol{id: id, info: info, listed: true}
		}
	}
}

// empty: the daemon knows nothing of v worth keeping.
func (v *vol) empty() bool {
	return !v.busy && !v.listed && v.app == "" && v.msg == "" && !v.failed && !v.measured && !v.wasDelete
}

// listed returns volume id as the last listing showed it.
func (d *Daemon) listed(id string) (VolumeInfo, bool) {
	if v := d.volumes[id]; v != nil && v.listed {
		return v.info, true
	}
	return VolumeInfo{}, false
}

// volumeReady reports whether a guest may start on volume id now: it is
// on the host and no work is in flight on it; why says what holds it
// back otherwise (the sentence an action left, or the work under way).
func (d *Daemon) volumeReady(id string, now time.Time) (ready bool, why string) {
	v := d.volumes[id]
	switch {
	case v == nil:
		return false, ""
	case v.busy:
		return false, plan.VolumeHoldsBack(v.workNow(), now)
	}
	return v.listed, v.msg
}

// volumeFailures is every volume's last failed action, as the planner
// reads them (nil when none failed).
func (d *Daemon) volumeFailures() map[string]plan.VolumeFailure {
	var out map[string]plan.VolumeFailure
	for id, v := range d.volumes {
		if v.failed {
			if out == nil {
				out = map[string]plan.VolumeFailure{}
			}
			out[id] = v.failure
		}
	}
	return out
}

// appOfVolume is the app a document named volume id for, "" when none
// did.
func (d *Daemon) appOfVolume(id string) string {
	if v := d.volumes[id]; v != nil {
		return v.app
	}
	return ""
}

// giveUpUnasked gives up the making of every volume that doc, now in
// force, no longer asks as the work was planned (plan.GiveUpMaking): its
// worker's Converge ends, and the seed removes its archive and what it
// wrote. The next pass plans the volume as doc asks. Called with mu held.
func (d *Daemon) giveUpUnasked(doc *desired.HostDesiredState) {
	for _, v := range d.volumes {
		if v.giveUp != nil && v.work.Kind == plan.Provision && plan.GiveUpMaking(doc, v.asked) {
			v.giveUp(volume.ErrGivenUp)
			v.giveUp = nil
		}
	}
}
