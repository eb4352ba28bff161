package daemon

import (
	"time"

	"alpnib.dev/nibrunner/plan"
)

// observed is what the daemon knows now, as the planner reads it: the one
// place a plan.Observed is made (mu held). It holds every app the daemon
// has a record of (facts, and the traffic the proxy saw), and an app never
// recorded only while it has a note (why its start was held back: a pass
// clears the notes before it observes, so its plan sees none); the
// volumes as last listed (setListing, and what their workers committed
// since); the checkpoints and exports listed in cps and exps; the failed
// volume actions and the free disk.
//
// only, when not "", narrows it to that app and its volume: a wake or a
// sleep asks the planner about one app (plan.App), which reads no more.
func (d *Daemon) observed(now time.Time, only string, cps map[string]CheckpointInfo, exps map[string]ExportInfo) plan.Observed {
	obs := plan.Observed{Now: now, Problems: d.acc.problems}
	if only != "" {
		obs.Instances, obs.Volumes = map[string]plan.Instance{}, map[string]plan.Volume{}
		if o, ok := d.apps.observedOne(only); ok {
			obs.Instances[only] = o
		}
		if in := d.instance(only); in != nil {
			if v, ok := d.vols.listed(string(in.VolumeId)); ok {
				obs.Volumes[string(in.VolumeId)] = plan.Volume{SizeBytes: v.SizeBytes, AllocatedBytes: v.AllocatedBytes}
			}
		}
		return obs
	}
	obs.Checkpoints = make(map[string]bool, len(cps))
	obs.Exports = make(map[string]bool, len(exps))
	obs.Instances, obs.Volumes = d.apps.observed(), d.vols.observed()
	obs.VolumeFailures, obs.DiskFree = d.vols.failures(), d.vols.diskFree
	for id := range cps {
		obs.Checkpoints[id] = true
	}
	for id := range exps {
		obs.Exports[id] = true
	}
	return obs
}

// observedApp is what the planner is told of app a: nothing until the
// daemon has a record of it, or a note on why its start was held back.
func (ps *apps) observedApp(a *app) (plan.Instance, bool) {
	switch {
	case a.rec != nil:
		o := ps.facts(a)
		if ps.deps.Traffic != nil {
			o.LastTrafficAt, o.Busy = ps.deps.Traffic.Activity(a.id)
		}
		return o, true
	case a.note != "":
		return ps.facts(a), true
	}
	return plan.Instance{}, false
}
