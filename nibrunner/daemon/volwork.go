package daemon

import (
	"context"
	"errors"
	"reflect"
	"time"

	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// Volume work (making, seeding, growing, deleting a volume) runs on the
// volume's worker, a goroutine of its own, never inside the pass: a seed
// may fetch and unpack gigabytes for longer than any pass should take, and
// the other volumes and apps converge meanwhile. Each worker takes one of
// Config.VolumeJobs turns and runs within Config.VolumeTimeout, its own
// budget; it commits what happened under mu and asks for a pass. A pass
// hands out work to a volume only when none is in flight on it.

// apply carries out the plan's volume actions: the ones that only
// say something are recorded at once; the others go to the volumes'
// workers. The pass then waits for that work for at most
// Config.VolumeSettle: work that ends within it (an empty volume made, one
// deleted) is seen by this pass's admission, so an app on a new volume
// boots in the pass that made the volume; longer work goes on without it.
//
// The actions are planned on a listing begun after commit listed: a volume
// whose worker committed since (made, seeded, grown, deleted, failed) is
// not as the plan read it, and is left to the next pass, which its commit
// asked for.
func (vs *volumes) apply(ctx context.Context, now time.Time, doc *desired.HostDesiredState, acts []plan.VolumeAction, listed uint64) {
	vs.clearSettled(acts, listed)
	var handed []<-chan struct{}
	for _, a := range acts {
		if done := vs.applyOne(now, doc, a, listed); done != nil {
			handed = append(handed, done)
		}
	}
	if len(handed) == 0 {
		return
	}
	settle := vs.clock.NewTimer(vs.settle)
	defer settle.Stop()
	for _, done := range handed {
		select {
		case <-done:
		case <-settle.C():
			return
		case <-ctx.Done():
			return
		}
	}
}

// applyOne records what action a says of its volume, or hands it to the
// volume's worker and returns the channel closed when that work ends (nil
// when nothing was handed out, or the volume is stale since commit
// listed).
func (vs *volumes) applyOne(now time.Time, doc *desired.HostDesiredState, a plan.VolumeAction, listed uint64) <-chan struct{} {
	var dv *desired.DesiredVolume
	for i := range doc.Volumes {
		if string(doc.Volumes[i].VolumeId) == a.VolumeID {
			dv = &doc.Volumes[i]
		}
	}
	if dv == nil {
		return nil
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.of(a.VolumeID)
	if v.stale(listed) {
		return nil // its worker is at it, or was; the next pass plans again
	}
	switch a.Kind {
	case plan.Blocked, plan.RefuseShrink, plan.NoDisk:
		v.msg = explain.VolumeActionMessage(a, v.info.SizeBytes, dv.SizeBytes)
		return nil
	case plan.RetryLater:
		return nil // its failure's sentence stands, saying when
	}
	spec := volume.Spec{VolumeID: a.VolumeID, SizeBytes: dv.SizeBytes, State: volume.Present, Progress: &volume.Progress{}, Clock: vs.clock}
	if c := dv.InitialContents; c != nil {
		spec.InitialContents = &volume.Contents{Digest: string(c.Digest), ObjectKey: string(c.ObjectKey), DestinationPath: string(c.DestinationPath)}
	}
	if a.Kind == plan.Teardown {
		spec.State = volume.Absent
	}
	v.busy, v.turn, v.progress = true, false, spec.Progress
	v.work, v.asked = plan.VolumeWork{Kind: a.Kind, SizeBytes: a.SizeBytes, Since: now}, *dv
	if a.Kind == plan.Provision && spec.InitialContents != nil {
		v.work.Seeding, v.work.ObjectKey = true, spec.InitialContents.ObjectKey
	}
	done := make(chan struct{})
	if _, ok := vs.workers.Go(func(ctx context.Context) {
		defer close(done)
		vs.work(ctx, *dv, a, spec)
	}); !ok {
		v.idle() // the daemon closes: the next one plans the volume again
		return nil
	}
	return done
}

// work is one action on one volume's worker: it waits for a turn,
// takes down the guests a grow needs down, converges the volume within its
// own budget, and commits what happened.
func (vs *volumes) work(ctx context.Context, dv desired.DesiredVolume, a plan.VolumeAction, spec volume.Spec) {
	select {
	case vs.turns <- struct{}{}:
	case <-ctx.Done():
		vs.idle(a.VolumeID)
		return
	}
	defer func() { <-vs.turns }()
	// The work may have waited for its turn across documents: it goes on
	// only while the document in force still says of this volume what it
	// was planned on (a teardown of a volume asked present again, or of
	// one a document stopped naming, would delete a tenant's data; a seed
	// would make it from contents no longer asked for). Else the next
	// pass plans the volume again.
	vs.mu.Lock()
	if !stillAsked(vs.host.inForce(), dv) {
		v := vs.of(a.VolumeID)
		v.idle()
		vs.committed(v)
		vs.mu.Unlock()
		vs.host.Kick()
		return
	}
	// A making the next documents no longer ask is given up (giveUpUnasked).
	wctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	v := vs.of(a.VolumeID)
	v.turn, v.giveUp = true, giveUp
	vs.mu.Unlock()
	cctx, cancel := context.WithTimeout(wctx, vs.timeout)
	defer cancel()
	if a.Kind == plan.Grow {
		vs.host.takeDownForGrow(cctx, a.VolumeID)
	}
	made, err := vs.backend.Converge(cctx, spec)
	if err == nil && made.Restored && dv.InitialContents != nil {
		// The app's memory may have come with it: it arrives asleep
		// before a pass can boot it on the volume.
		vs.host.restoredFromCheckpoint(cctx, string(dv.AppId), a.VolumeID, string(dv.InitialContents.ObjectKey))
	}
	now := vs.now()
	// The outcome is recorded even when the daemon closes meanwhile.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), recordGrace)
	defer rcancel()
	switch {
	case err == nil:
		// Done, even when the daemon began closing meanwhile: what the
		// backend did is recorded (Close stops the workers before the
		// database), or the next daemon would neither know
		// the volume deleted (a teardown) nor made again (a provision).
		vs.doneWork(rctx, now, dv, a)
	case ctx.Err() != nil:
		// The daemon closes: the next one plans the volume again (and a
		// seed resumes where the volume backend can).
		vs.idle(a.VolumeID)
	case errors.Is(context.Cause(wctx), volume.ErrGivenUp):
		// Not a failure: nothing asks it any more. The backend removed
		// what the making wrote; the next pass plans the volume anew.
		vs.idle(a.VolumeID)
		vs.logf("nibrunnerd: the making of volume %s is given up: the document in force no longer asks it as it was planned", a.VolumeID)
	default:
		vs.failedWork(rctx, now, dv, a, err)
	}
	vs.host.Kick()
}

// idle frees volume id's worker without recording an outcome.
func (vs *volumes) idle(id string) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.of(id)
	v.idle()
	vs.committed(v)
}

// failedWork records that a failed with err at now: the sentence the
// report gives, and the failure whose backoff the next attempt waits for,
// in the database first, so a restart waits for it too (a refused shrink
// waits for another document, not for a backoff).
func (vs *volumes) failedWork(ctx context.Context, now time.Time, dv desired.DesiredVolume, a plan.VolumeAction, err error) {
	if errors.Is(err, volume.ErrShrink) {
		vs.mu.Lock()
		v := vs.of(a.VolumeID)
		v.idle()
		vs.committed(v)
		v.msg = err.Error() // says what to ask for instead
		vs.mu.Unlock()
		return
	}
	vs.mu.Lock()
	f := vs.nextFailure(now, dv, a)
	vs.mu.Unlock()
	msg := reported.Truncate(explain.VolumeFailedMessage(a, dv.SizeBytes, f.At.Add(plan.VolumeRetry.Delay(f.Count)), err.Error()))
	if err := vs.db.PutVolumeFailure(ctx, db.VolumeFailure{VolumeID: a.VolumeID, Kind: string(f.Kind), SizeBytes: f.SizeBytes,
		Seed: f.Seed, Count: f.Count, At: f.At, Message: msg}); err != nil {
		vs.logf("nibrunnerd: %v; a restart tries the volume again without waiting for its backoff", err)
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	v := vs.of(a.VolumeID)
	v.idle()
	vs.committed(v)
	v.failure, v.failed, v.msg = f, true, msg
}

// doneWork records that a succeeded: a deletion is remembered in
// the database (and a volume made again is no longer deleted), the
// listing holds the volume as it is now, and a grown volume's fill is
// measured again (its last measurement holds the old size).
func (vs *volumes) doneWork(ctx context.Context, now time.Time, dv desired.DesiredVolume, a plan.VolumeAction) {
	vs.mu.Lock()
	v := vs.of(a.VolumeID)
	size, wasDeleted, wasFailed := v.info.SizeBytes, v.wasDelete, v.failed
	vs.mu.Unlock()
	if wasFailed {
		if err := vs.db.ClearVolumeFailure(ctx, a.VolumeID); err != nil {
			vs.logf("nibrunnerd: %v; a restart remembers the failure this mended", err)
		}
	}
	var dvol db.DeletedVolume
	undeleted := false
	switch a.Kind {
	case plan.Teardown:
		dvol = db.DeletedVolume{VolumeID: a.VolumeID, AppID: string(dv.AppId), SizeBytes: size, DeletedAt: now}
		if err := vs.db.MarkVolumeDeleted(ctx, dvol); err != nil {
			vs.logf("nibrunnerd: %v", err)
		}
	case plan.Provision:
		if wasDeleted {
			undeleted = vs.db.UndeleteVolume(ctx, a.VolumeID) == nil
		}
	}
	vs.mu.Lock()
	v = vs.of(a.VolumeID)
	v.idle()
	vs.committed(v)
	v.msg = ""
	v.failure, v.failed = plan.VolumeFailure{}, false
	switch a.Kind {
	case plan.Teardown:
		v.info, v.listed = VolumeInfo{}, false
		v.deleted, v.wasDelete = dvol, true
		v.usage, v.measured = volume.Usage{}, false
	default:
		v.info, v.listed = VolumeInfo{SizeBytes: plan.RoundSize(dv.SizeBytes), Path: vs.backend.Path(a.VolumeID)}, true
		if undeleted {
			v.deleted, v.wasDelete = db.DeletedVolume{}, false
		}
		if a.Kind == plan.Grow {
			v.usage, v.measured = volume.Usage{}, false
		}
	}
	vs.mu.Unlock()
	if u, ok := vs.backend.(VolumeUsage); ok && a.Kind == plan.Grow {
		vs.measure(ctx, u, a.VolumeID, now)
	}
}

// clearSettled forgets the sentence of every volume the plan
// leaves alone and no worker is at: it is as the document asks, so what
// an earlier pass said of it (a refused shrink, a teardown held back, a
// failure since mended) no longer holds. Only an action cleared it before,
// and a document that asked for the size the volume already has plans
// none. A volume stale since commit listed keeps its sentence: the plan
// did not read what its worker committed.
func (vs *volumes) clearSettled(acts []plan.VolumeAction, listed uint64) {
	acted := make(map[string]bool, len(acts))
	for _, a := range acts {
		acted[a.VolumeID] = true
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	for id, v := range vs.byID {
		if !acted[id] && !v.stale(listed) {
			v.msg = ""
		}
	}
}

// stillAsked reports whether doc says of dv's volume what dv says.
func stillAsked(doc *desired.HostDesiredState, dv desired.DesiredVolume) bool {
	if doc == nil {
		return false
	}
	for i := range doc.Volumes {
		if doc.Volumes[i].VolumeId == dv.VolumeId {
			return reflect.DeepEqual(doc.Volumes[i], dv)
		}
	}
	return false
}
