package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/volume"
)

// apply hands the plan's checkpoints and exports to the job runner
// (background.go), once the instance actions are under way.
func (d *Daemon) apply(acts plan.Actions) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.background(acts)
}

func (d *Daemon) applyVolume(ctx context.Context, now time.Time, doc *desired.HostDesiredState, a plan.VolumeAction, vols map[string]VolumeInfo) {
	var dv *desired.DesiredVolume
	for i := range doc.Volumes {
		if string(doc.Volumes[i].VolumeId) == a.VolumeID {
			dv = &doc.Volumes[i]
		}
	}
	if dv == nil {
		return
	}
	spec := volume.Spec{VolumeID: a.VolumeID, SizeBytes: dv.SizeBytes, State: volume.Present}
	if c := dv.InitialContents; c != nil {
		spec.InitialContents = &volume.Contents{Digest: string(c.Digest), ObjectKey: string(c.ObjectKey), DestinationPath: string(c.DestinationPath)}
	}
	switch a.Kind {
	case plan.Blocked:
		d.setVolErr(a.VolumeID, fmt.Sprintf("asked absent but held back: app %s still uses it; it is deleted once no instance in the document names it", a.By))
		return
	case plan.RefuseShrink:
		have := vols[a.VolumeID].SizeBytes
		d.setVolErr(a.VolumeID, fmt.Sprintf("a volume only grows: it is %d bytes and the document asks for %d; ask for %d or more (shrinking would destroy data)", have, dv.SizeBytes, have))
		return
	case plan.RetryLater:
		return // its failure's sentence stands, saying when
	case plan.NoDisk:
		d.setVolErr(a.VolumeID, plan.NoDiskMessage(a))
		return
	case plan.Teardown:
		spec.State = volume.Absent
	case plan.Grow:
		// Growing is offline: the guest on it goes down and the next
		// plan starts it again on the bigger volume.
		d.mu.Lock()
		var on []string
		for id, x := range d.apps {
			if x.rec != nil && x.rec.VolumeID == a.VolumeID && x.up() && !x.busy {
				x.busy = true
				d.stopProber(x)
				on = append(on, id)
			}
		}
		d.mu.Unlock()
		for _, id := range on {
			err := d.takeDown(ctx, id, false)
			d.commit(id, func(x *app) { x.tookDown(err) })
		}
	}
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err := d.deps.Volumes.Converge(cctx, spec)
	if err != nil {
		what := "could not be made"
		switch a.Kind {
		case plan.Teardown:
			what = "could not be deleted"
		case plan.Grow:
			what = fmt.Sprintf("could not be grown to %d bytes", dv.SizeBytes)
		}
		if errors.Is(err, volume.ErrShrink) {
			d.setVolErr(a.VolumeID, err.Error()) // says what to ask for instead
			return
		}
		at := d.volumeFailed(now, dv, a)
		d.setVolErr(a.VolumeID, what+" (tried again at "+at.UTC().Format(time.RFC3339)+"): "+err.Error())
		return
	}
	d.volumeDone(a.VolumeID)
	d.setVolErr(a.VolumeID, "")
	switch a.Kind {
	case plan.Teardown:
		dvol := db.DeletedVolume{VolumeID: a.VolumeID, AppID: string(dv.AppId), SizeBytes: vols[a.VolumeID].SizeBytes, DeletedAt: now}
		if err := d.db.MarkVolumeDeleted(ctx, dvol); err != nil {
			d.cfg.Logf("nibrunnerd: %v", err)
		}
		d.mu.Lock()
		v := d.volOf(a.VolumeID)
		v.deleted, v.wasDelete = dvol, true
		d.mu.Unlock()
		delete(vols, a.VolumeID)
	case plan.Grow:
		// Its fill is measured again now: the last measurement holds the
		// old totalBytes, and the next was up to a minute away. One that
		// fails leaves none rather than the old size.
		d.mu.Lock()
		d.volOf(a.VolumeID).measured = false
		d.mu.Unlock()
		if u, ok := d.deps.Volumes.(VolumeUsage); ok {
			d.measureVolume(ctx, u, a.VolumeID, now)
		}
	case plan.Provision:
		d.mu.Lock()
		was := d.volOf(a.VolumeID).wasDelete
		d.mu.Unlock()
		if was {
			if err := d.db.UndeleteVolume(ctx, a.VolumeID); err == nil {
				d.mu.Lock()
				v := d.volOf(a.VolumeID)
				v.deleted, v.wasDelete = db.DeletedVolume{}, false
				d.mu.Unlock()
			}
		}
	}
	d.mu.Lock()
	v := d.volOf(a.VolumeID)
	if a.Kind != plan.Teardown {
		vols[a.VolumeID] = VolumeInfo{SizeBytes: plan.RoundSize(dv.SizeBytes), Path: d.deps.Volumes.Path(a.VolumeID)}
		v.info, v.listed = vols[a.VolumeID], true
	} else {
		v.info, v.listed = VolumeInfo{}, false
	}
	d.mu.Unlock()
}

// clearSettledVolumes forgets the sentence of every volume the plan
// leaves alone: it is as the document asks, so what an earlier pass said
// of it (a refused shrink, a teardown held back, a failure since mended)
// no longer holds. Only an action cleared it before, and a document that
// asked for the size the volume already has plans none.
func (d *Daemon) clearSettledVolumes(acts []plan.VolumeAction) {
	acted := make(map[string]bool, len(acts))
	for _, a := range acts {
		acted[a.VolumeID] = true
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for id, v := range d.volumes {
		if !acted[id] {
			v.msg = ""
		}
	}
}

// setVolErr sets (or, with "", clears) the sentence reported for volume id.
func (d *Daemon) setVolErr(id, msg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.volOf(id).msg = msg
}
