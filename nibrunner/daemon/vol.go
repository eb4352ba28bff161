package daemon

import (
	"context"

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
// forgetting a volume is deleting its entry from volumes.byID. Every
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

	// busy: an action is in flight on the volume's worker (volwork.go), the
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
	// changedAt is the commit (commits) of its worker's last outcome:
	// a pass that listed the volumes before it keeps what the worker
	// committed rather than its listing, and hands the volume nothing
	// (stale), as app.changedAt does for an app.
	changedAt uint64
}

// stale reports whether what a pass listed of v after commit seen is out
// of date: its worker is busy, or committed since.
func (v *vol) stale(seen uint64) bool { return v.busy || v.changedAt > seen }

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

// empty: the daemon knows nothing of v worth keeping.
func (v *vol) empty() bool {
	return !v.busy && !v.listed && v.app == "" && v.msg == "" && !v.failed && !v.measured && !v.wasDelete
}
