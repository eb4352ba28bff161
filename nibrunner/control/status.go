package control

import (
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// AppStatus is everything the report says about one app: its instance,
// its volume, the checkpoints of that volume and the app's exports.
type AppStatus struct {
	HostId      string                `json:"hostId"`
	ReportedAt  time.Time             `json:"reportedAt"`
	Instance    reported.Instance     `json:"instance"`
	Volumes     []reported.Volume     `json:"volumes"`
	Checkpoints []reported.Checkpoint `json:"checkpoints"`
	Exports     []reported.Export     `json:"exports"`
}

// Owners says, from the accepted document, which volume each app's
// instance is on and which app each export is of: the report names
// neither.
type Owners struct {
	VolumeOf map[string]string // app → volume
	AppOf    map[string]string // export → app
}

// OwnersOf reads the owners out of the document the daemon accepted (nil:
// none yet, and then the maps are empty).
func OwnersOf(doc *desired.HostDesiredState) Owners {
	o := Owners{VolumeOf: map[string]string{}, AppOf: map[string]string{}}
	if doc == nil {
		return o
	}
	for _, in := range doc.Instances {
		o.VolumeOf[string(in.AppId)] = string(in.VolumeId)
	}
	for _, e := range doc.Exports {
		o.AppOf[string(e.ExportId)] = string(e.AppId)
	}
	return o
}

// StatusOf picks app's part of the report; ok is false when the report has
// no instance of that app. A volume is the app's when the report says so
// or the accepted document puts the app's instance on it.
func StatusOf(r *reported.HostReportedState, app string, o Owners) (AppStatus, bool) {
	s := AppStatus{HostId: string(r.HostId), ReportedAt: r.ReportedAt,
		Volumes: []reported.Volume{}, Checkpoints: []reported.Checkpoint{}, Exports: []reported.Export{}}
	found := false
	for _, in := range r.Instances {
		if string(in.AppId) == app {
			s.Instance, found = in, true
		}
	}
	if !found {
		return s, false
	}
	vols := map[string]bool{}
	for _, v := range r.Volumes {
		if string(v.AppId) == app || o.VolumeOf[app] == string(v.VolumeId) {
			s.Volumes = append(s.Volumes, v)
			vols[string(v.VolumeId)] = true
		}
	}
	for _, c := range r.Checkpoints {
		if vols[string(c.VolumeId)] {
			s.Checkpoints = append(s.Checkpoints, c)
		}
	}
	for _, e := range r.Exports {
		if o.AppOf[string(e.ExportId)] == app {
			s.Exports = append(s.Exports, e)
		}
	}
	return s, true
}
