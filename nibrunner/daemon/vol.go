package daemon

import (
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/plan"
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
	// backoff (plan.VolumeRetry), when failed. It does not outlive the
	// daemon: a restart tries at once.
	failure plan.VolumeFailure
	failed  bool
	// usage is the volume's last measured fill, when measured.
	usage    volume.Usage
	measured bool
	// deleted is what the database remembers of the volume's deletion,
	// when this host deleted it on an explicit absent.
	deleted   db.DeletedVolume
	wasDelete bool
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

// setListing records what a listing of the host's volumes showed: every
// volume in it is listed, every other one is not (and its measured fill
// goes with it).
func (d *Daemon) setListing(vols map[string]VolumeInfo) {
	for id, v := range d.volumes {
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
	return !v.listed && v.app == "" && v.msg == "" && !v.failed && !v.measured && !v.wasDelete
}

// listed returns volume id as the last listing showed it.
func (d *Daemon) listed(id string) (VolumeInfo, bool) {
	if v := d.volumes[id]; v != nil && v.listed {
		return v.info, true
	}
	return VolumeInfo{}, false
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

// volumeMsg is the sentence reported for volume id, "" for none.
func (d *Daemon) volumeMsg(id string) string {
	if v := d.volumes[id]; v != nil {
		return v.msg
	}
	return ""
}

// appOfVolume is the app a document named volume id for, "" when none
// did.
func (d *Daemon) appOfVolume(id string) string {
	if v := d.volumes[id]; v != nil {
		return v.app
	}
	return ""
}
