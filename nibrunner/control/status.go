package control

import (
	"encoding/json"
	"time"

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

// Owners says, from desired.json, which volume each app's instance is on
// and which app each export is of: the report names neither.
type Owners struct {
	VolumeOf map[string]string // app → volume
	AppOf    map[string]string // export → app
}

// OwnersOf reads the owners out of a desired.json's bytes. It is lenient
// on purpose (a document the daemon refused still names its owners), and
// gives empty maps for bytes that are not JSON.
func OwnersOf(doc []byte) Owners {
	var d struct {
		Instances []struct {
			AppId    string `json:"appId"`
			VolumeId string `json:"volumeId"`
		} `json:"instances"`
		Exports []struct {
			ExportId string `json:"exportId"`
			AppId    string `json:"appId"`
		} `json:"exports"`
	}
	o := Owners{VolumeOf: map[string]string{}, AppOf: map[string]string{}}
	if json.Unmarshal(doc, &d) != nil {
		return o
	}
	for _, in := range d.Instances {
		o.VolumeOf[in.AppId] = in.VolumeId
	}
	for _, e := range d.Exports {
		o.AppOf[e.ExportId] = e.AppId
	}
	return o
}

// StatusOf picks app's part of the report; ok is false when the report has
// no instance of that app. A volume is the app's when the report says so
// or desired.json puts the app's instance on it.
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
