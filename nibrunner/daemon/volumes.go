package daemon

import (
	"context"
	"sort"
	"sync"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/daemon/manager"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/volume"
)

// volumes is the daemon's volume component: one vol per volume it knows,
// the workers that make, seed, grow and delete them (volwork.go), what the
// disk they are made on has free (volgate.go), and their measured fill
// (persist.go). The daemon composes it (Daemon.vols); a pass lists the
// volumes and hands it the listing and the plan's volume actions, the
// report and the planner's input read it.
//
// Its lock is the daemon's mu, not one of its own: a pass decides over
// apps and volumes in one critical section (plan.Observed holds both;
// admission reads a volume's readiness as it reserves an app's memory; a
// grow takes the guests on its volume down), and one commit sequence
// (commits) orders what the apps' and the volumes' workers did. Two locks
// would need an order between them and would let a plan read a volume and
// an app at different moments. The rule is the daemon's: no I/O under mu.
type volumes struct {
	// Immutable after newVolumes.
	backend Volumes
	db      *db.DB
	clock   clock.Clock
	logf    func(format string, args ...any)
	timeout time.Duration // Config.VolumeTimeout: one work's budget
	settle  time.Duration // Config.VolumeSettle: how long a pass waits
	turns   chan struct{} // Config.VolumeJobs: the workers running at once
	workers *manager.Pool // the volume workers, one per action
	host    volumeHost
	mu      *sync.Mutex // the daemon's mu: guards every field below
	seq     *commits    // the daemon's commits (mu)

	// byID holds one value per volume the daemon knows (mu).
	byID map[string]*vol
	// diskFree is the free space the last pass read (nil: unknown), and
	// freeErr the last failure to read it, logged once (mu).
	diskFree *uint64
	freeErr  string
}

// volumeHost is what the volume component asks of the rest of the daemon.
type volumeHost interface {
	// inForce is the accepted document (mu held).
	inForce() *desired.HostDesiredState
	// takeDownForGrow takes down the guests on volume id that its grow
	// needs down (mu not held).
	takeDownForGrow(ctx context.Context, id string)
	// restoredFromCheckpoint: volume vol of app was just made from the
	// checkpoint at objectKey, and is not yet made in the daemon's eyes
	// (mu not held).
	restoredFromCheckpoint(ctx context.Context, app, vol, objectKey string)
	// Kick asks for a pass.
	Kick()
}

// commits numbers the commits of the apps' and the volumes' workers in one
// sequence: a pass remembers the last commit before it observed, and
// leaves alone an app or a volume whose worker committed since. Guarded by
// the daemon's mu.
type commits struct{ n uint64 }

// next stamps a new commit (mu held).
func (c *commits) next() uint64 { c.n++; return c.n }

// last is the newest commit (mu held).
func (c *commits) last() uint64 { return c.n }

func newVolumes(cfg Config, backend Volumes, store *db.DB, mu *sync.Mutex, seq *commits, host volumeHost) *volumes {
	return &volumes{
		backend: backend, db: store, clock: cfg.Clock, logf: cfg.Logf,
		timeout: cfg.VolumeTimeout, settle: cfg.VolumeSettle,
		turns: make(chan struct{}, cfg.VolumeJobs), workers: manager.NewPool(),
		host: host, mu: mu, seq: seq,
		byID: map[string]*vol{},
	}
}

// load reads what the database remembers of the volumes: the ones this
// host deleted, and the last failed action of each (mu not needed: the
// daemon is not running yet).
func (vs *volumes) load(ctx context.Context) error {
	deleted, err := vs.db.DeletedVolumes(ctx)
	if err != nil {
		return err
	}
	for id, dv := range deleted {
		v := vs.of(id)
		v.deleted, v.wasDelete = dv, true
	}
	failures, err := vs.db.VolumeFailures(ctx)
	if err != nil {
		return err
	}
	for id, f := range failures {
		v := vs.of(id)
		v.failure = plan.VolumeFailure{Kind: plan.VolumeKind(f.Kind), SizeBytes: f.SizeBytes, Seed: f.Seed, Count: f.Count, At: f.At}
		v.failed, v.msg = true, f.Message
	}
	return nil
}

// now is the volumes' time, the daemon's, in UTC.
func (vs *volumes) now() time.Time { return vs.clock.Now().UTC() }

// named records the app doc names each of its volumes for (mu held).
func (vs *volumes) named(doc *desired.HostDesiredState) {
	for _, v := range doc.Volumes {
		vs.of(string(v.VolumeId)).app = string(v.AppId)
	}
}

// committed stamps v with a new commit (mu held): what a listing taken
// before it showed of v no longer holds.
func (vs *volumes) committed(v *vol) { v.changedAt = vs.seq.next() }

// of returns volume id's entry, made empty if there is none (mu held).
func (vs *volumes) of(id string) *vol {
	v := vs.byID[id]
	if v == nil {
		v = &vol{id: id}
		vs.byID[id] = v
	}
	return v
}

// setListing records what a listing of the host's volumes, begun after
// commit seen, showed: every volume in it is listed, every other one is
// not (and its measured fill goes with it), except a volume whose worker
// committed since, which keeps what its worker committed (mu held).
func (vs *volumes) setListing(vols map[string]VolumeInfo, seen uint64) {
	for id, v := range vs.byID {
		if v.changedAt > seen {
			continue
		}
		if info, ok := vols[id]; ok {
			v.info, v.listed = info, true
			continue
		}
		v.info, v.listed = VolumeInfo{}, false
		if v.empty() {
			delete(vs.byID, id)
		}
	}
	for id, info := range vols {
		if v := vs.byID[id]; v == nil {
			vs.byID[id] = &vol{id: id, info: info, listed: true}
		}
	}
}

// listed returns volume id as the last listing showed it (mu held).
func (vs *volumes) listed(id string) (VolumeInfo, bool) {
	if v := vs.byID[id]; v != nil && v.listed {
		return v.info, true
	}
	return VolumeInfo{}, false
}

// listedIDs are the volumes the last listing showed, sorted (mu held).
func (vs *volumes) listedIDs() []string {
	var ids []string
	for id, v := range vs.byID {
		if v.listed {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// observed is every listed volume as the planner reads it (mu held).
func (vs *volumes) observed() map[string]plan.Volume {
	out := make(map[string]plan.Volume, len(vs.byID))
	for id, v := range vs.byID {
		if v.listed {
			out[id] = plan.Volume{SizeBytes: v.info.SizeBytes, AllocatedBytes: v.info.AllocatedBytes}
		}
	}
	return out
}

// ready reports whether a guest may start on volume id now: it is on the
// host and no work is in flight on it; why says what holds it back
// otherwise (the sentence an action left, or the work under way) (mu
// held).
func (vs *volumes) ready(id string, now time.Time) (ready bool, why string) {
	v := vs.byID[id]
	switch {
	case v == nil:
		return false, ""
	case v.busy:
		return false, explain.VolumeHoldsBack(v.workNow(), now)
	}
	return v.listed, v.msg
}

// failures is every volume's last failed action, as the planner reads
// them (nil when none failed) (mu held).
func (vs *volumes) failures() map[string]plan.VolumeFailure {
	var out map[string]plan.VolumeFailure
	for id, v := range vs.byID {
		if v.failed {
			if out == nil {
				out = map[string]plan.VolumeFailure{}
			}
			out[id] = v.failure
		}
	}
	return out
}

// appOf is the app a document named volume id for, "" when none did (mu
// held).
func (vs *volumes) appOf(id string) string {
	if v := vs.byID[id]; v != nil {
		return v.app
	}
	return ""
}

// giveUpUnasked gives up the making of every volume that doc, now in
// force, no longer asks as the work was planned (plan.GiveUpMaking): its
// worker's Converge ends, and the seed removes its archive and what it
// wrote. The next pass plans the volume as doc asks (mu held).
func (vs *volumes) giveUpUnasked(doc *desired.HostDesiredState) {
	for _, v := range vs.byID {
		if v.giveUp != nil && v.work.Kind == plan.Provision && plan.GiveUpMaking(doc, v.asked) {
			v.giveUp(volume.ErrGivenUp)
			v.giveUp = nil
		}
	}
}

// atRestForCopy refuses the copy of volume id while its worker is making,
// growing or deleting it (a grow resizes the file under the copy); the
// job's retry copies it after.
func (vs *volumes) atRestForCopy(id string) error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v := vs.byID[id]; v != nil && v.busy {
		return explain.CopyVolumeAtWork(id)
	}
	return nil
}

// copyFacts is what the host knows of volume id for a checkpoint or an export
// of it: whether it holds it, whether it deleted it, and why its making
// failed (failures: this report's failed volumes) (mu held).
func (vs *volumes) copyFacts(id string, failures map[string]string) plan.VolumeOf {
	var o plan.VolumeOf
	if v := vs.byID[id]; v != nil {
		o.There, o.Deleted = v.listed, v.wasDelete
	}
	o.Failure = failures[id]
	return o
}

// reports renders what the planner says of every volume: doc's
// (VolumeStatus), and the ones it does not name (detached, or deleted by
// this host, reported for the app appOf says), each with the scheduled
// checkpoints sched took of it (mu held).
func (vs *volumes) reports(doc *desired.HostDesiredState, now time.Time, appOf func(id string) string, sched Schedule) []reported.Volume {
	out := make([]reported.Volume, 0, len(doc.Volumes))
	for _, v := range doc.Volumes {
		var f plan.VolumeFacts
		if dv := vs.byID[string(v.VolumeId)]; dv != nil {
			f = dv.facts()
		}
		out = append(out, explain.VolumeStatus(v, f, now))
	}
	known := func(yield func(string, plan.VolumeFacts) bool) {
		for id, v := range vs.byID {
			if !yield(id, v.facts()) {
				return
			}
		}
	}
	out = append(out, plan.UnlistedVolumes(doc, known, appOf)...)
	sort.Slice(out, func(i, j int) bool { return out[i].VolumeId < out[j].VolumeId })
	if s := sched; s != nil {
		for i := range out {
			for _, t := range s.Taken(string(out[i].VolumeId)) {
				out[i].Checkpoints = append(out[i].Checkpoints, reported.ScheduledCheckpoint{
					ObjectKey: desired.ObjectKey(t.Key), Digest: desired.Sha256Digest(t.Digest), TakenAt: t.TakenAt})
			}
		}
	}
	return out
}

// measureDue reads the fill of volumes not measured for a minute, a
// bounded number per pass, when the backend can measure.
func (vs *volumes) measureDue(ctx context.Context, now time.Time, vols map[string]VolumeInfo) {
	u, ok := vs.backend.(VolumeUsage)
	if !ok {
		return
	}
	budget := 64
	var due []string
	vs.mu.Lock()
	for id := range vols {
		if budget == 0 {
			break
		}
		if v := vs.byID[id]; v != nil && (v.busy || v.measured && now.Sub(v.usage.MeasuredAt) < time.Minute) {
			continue // its worker is at it, or it was measured lately
		}
		budget--
		due = append(due, id)
	}
	for id, v := range vs.byID {
		if _, ok := vols[id]; !ok {
			v.usage, v.measured = volume.Usage{}, false
		}
	}
	vs.mu.Unlock()
	for _, id := range due {
		vs.measure(ctx, u, id, now)
	}
}

// measure reads volume id's fill now; a measurement that fails
// leaves the last one as it was.
func (vs *volumes) measure(ctx context.Context, u VolumeUsage, id string, now time.Time) {
	got, err := u.Usage(ctx, id)
	if err != nil {
		return
	}
	got.MeasuredAt = now
	vs.mu.Lock()
	v := vs.of(id)
	v.usage, v.measured = got, true
	vs.mu.Unlock()
}
