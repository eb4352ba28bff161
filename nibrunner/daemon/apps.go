package daemon

import (
	"context"
	"sync"
	"time"

	"alpnib.dev/nibrunner/daemon/manager"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// apps is the daemon's app component: one app per app it knows, the
// workers that start, wake, sleep and stop their guests (act.go,
// start.go), the VM gate and the layer fetches those workers take turns
// at, the health probers (probe.go), the slots, and the records and
// meters it keeps in the database (persist.go). The daemon composes it
// (Daemon.apps): a pass brings it up to date with the guests it listed,
// plans over what it says of each app (facts), and hands it the plan's
// instance actions; a wake and a sleep ask it about one app.
//
// Like the volume component, its lock is the daemon's mu (see volumes for
// why one lock), and its workers stamp their commits in the daemon's one
// sequence (commits). No I/O happens under mu.
type apps struct {
	// Immutable after newApps.
	cfg     Config
	deps    Deps
	db      *db.DB
	gate    *gate         // the VM gate: max_concurrent_vm_starts
	fetches chan struct{} // layerFetches: the layer preparations at once
	workers *manager.Pool // the apps' workers, one per action
	probers *manager.Pool // the health probers, one per guest up
	host    appHost
	mu      *sync.Mutex // the daemon's mu: guards every field below
	seq     *commits    // the daemon's commits (mu)

	// byID holds one value per app the daemon knows: see app (mu).
	byID map[string]*app
	// forgotten are the apps forgotten since the last persist, whose
	// records it deletes (mu).
	forgotten []string
	// lastFlush is when the meters were last written (mu).
	lastFlush time.Time
}

// appHost is what the app component asks of the rest of the daemon. The
// methods marked "mu held" are called with the daemon's mu held.
type appHost interface {
	// instance is app id's instance in the accepted document, nil when
	// it lists none (mu held).
	instance(id string) *desired.DesiredInstance
	// inForce is the accepted document (mu held).
	inForce() *desired.HostDesiredState
	// docProblems says why instances are failed by the document itself
	// (mu held).
	docProblems() map[string]string
	// observeOne is what the planner reads of app id and its volume now
	// (mu held).
	observeOne(now time.Time, id string) plan.Observed
	// network says whether the network has its rules, and why not (mu
	// held).
	network() (ready bool, why string)
	// volumeReady says whether a guest may start on volume id now, and
	// why not (mu held).
	volumeReady(id string, now time.Time) (bool, string)
	// passes are the passes begun and the last one ended, and the
	// channel closed when the running (or next) pass ends (mu held).
	passes() (begun, done uint64, passed <-chan struct{})
	// publishLocked publishes the routes (mu held); routesChanged asks
	// the route applier to hand them over (mu not held).
	publishLocked()
	routesChanged()
	// Kick asks for a pass.
	Kick()
	// closing: the daemon began closing; stopping is closed then.
	closing() bool
	stopping() <-chan struct{}
}

func newApps(cfg Config, deps Deps, store *db.DB, mu *sync.Mutex, seq *commits, host appHost) *apps {
	return &apps{
		cfg: cfg, deps: deps, db: store,
		gate: newGate(cfg.MaxConcurrentVMStarts), fetches: make(chan struct{}, layerFetches),
		workers: manager.NewPool(), probers: manager.NewPool(),
		host: host, mu: mu, seq: seq,
		byID: map[string]*app{},
	}
}

// now is the apps' time, the daemon's, in UTC.
func (ps *apps) now() time.Time { return ps.cfg.Clock.Now().UTC() }

// load reads what the database remembers of the apps: their records,
// slots and meters (mu not needed: the daemon is not running yet).
func (ps *apps) load(ctx context.Context) error {
	recs, err := ps.db.Records(ctx)
	if err != nil {
		return err
	}
	for app, r := range recs {
		rec, err := decodeRecord(r.Data)
		if err != nil {
			ps.cfg.Logf("nibrunnerd: the record of %s is unreadable and is rebuilt from what is observed: %v", app, err)
			continue
		}
		a := ps.appOf(app)
		a.rec, a.persisted = rec, r.Data
	}
	slots, err := ps.db.Slots(ctx)
	if err != nil {
		return err
	}
	for app, n := range slots {
		a := ps.appOf(app)
		a.slot, a.hasSlot = n, true
	}
	meters, err := ps.db.AllMeters(ctx)
	if err != nil {
		return err
	}
	for app, m := range meters {
		a := ps.appOf(app)
		a.meters, a.metered = m, true
	}
	return nil
}

// closed is the app component's last word once every worker and prober
// ended (Daemon.keepState): a wake still waiting sees no prober, and the
// last meters are written.
func (ps *apps) closed() {
	ps.mu.Lock()
	for _, a := range ps.byID {
		a.prober = nil // ended with the probers' pool
		a.signal()
	}
	meters := ps.metersToFlush()
	ps.mu.Unlock()
	// The caller's context is usually over by now; the last meters still
	// get a bounded moment to reach the database.
	wctx, cancel := context.WithTimeout(context.Background(), recordGrace)
	defer cancel()
	ps.writeMeters(wctx, meters)
}

// clearNotes forgets every app's note before a pass observes (mu held).
func (ps *apps) clearNotes() {
	for _, a := range ps.byID {
		a.note = ""
	}
}

// holdNotes keeps the notes the pass that ended left, as a wake that
// waited for it reads them (mu held).
func (ps *apps) holdNotes() {
	for _, a := range ps.byID {
		a.heldBack = a.note
	}
}

// observed is every app the planner is told of (mu held).
func (ps *apps) observed() map[string]plan.Instance {
	out := make(map[string]plan.Instance, len(ps.byID))
	for id, a := range ps.byID {
		if o, ok := ps.observedApp(a); ok {
			out[id] = o
		}
	}
	return out
}

// observedOne is app id as the planner is told of it, when it is (mu
// held).
func (ps *apps) observedOne(id string) (plan.Instance, bool) {
	if a := ps.byID[id]; a != nil {
		return ps.observedApp(a)
	}
	return plan.Instance{}, false
}

// probedNow brings the health in obs up to date with what each prober
// sees now, and why it failed when the pass has not recorded that yet: a
// failed instance is never reported without its sentence (mu held).
func (ps *apps) probedNow(obs map[string]plan.Instance) {
	for id, o := range obs {
		if a := ps.byID[id]; a != nil && a.prober != nil {
			var why string
			if o.Health, why = a.prober.live(); o.FailReason == "" {
				o.FailReason = why
			}
			obs[id] = o
		}
	}
}

// used is the memory given to the guests up by their records, and the
// vCPUs their instances ask (mu held).
func (ps *apps) used() (mib uint64, cpus uint32) {
	for app, a := range ps.byID {
		if !a.up() {
			continue
		}
		if rec := a.rec; rec != nil {
			mib += rec.MemoryMiB
		}
		if in := ps.host.instance(app); in != nil {
			cpus += in.Config.Resources.VcpuCount
		}
	}
	return mib, cpus
}

// mounting is the app whose record mounts volume id, "" when none does
// (mu held).
func (ps *apps) mounting(id string) string {
	for app, a := range ps.byID {
		if a.rec != nil && a.rec.VolumeID == id {
			return app
		}
	}
	return ""
}

// handOut hands the plan's take-downs, sleeps and give-ups to the apps'
// workers, and returns the starts, which wait for slots, the network
// and the volumes (act). An app whose worker is busy, or committed since
// commit plannedAt, is left alone (mu held).
func (ps *apps) handOut(acts []plan.InstanceAction, plannedAt uint64) (ups []plan.InstanceAction) {
	var sleeps []plan.InstanceAction
	for _, x := range acts {
		a := ps.byID[x.AppID]
		if a != nil && a.stale(plannedAt) {
			continue // its worker is at it, or was; the next pass plans again
		}
		switch x.Kind {
		case plan.Stop, plan.Forget:
			ps.dispatch(x, nil, 0)
		case plan.GiveUp:
			if a == nil {
				continue
			}
			a.gaveUp()
			if a.up() {
				ps.dispatch(plan.InstanceAction{Kind: plan.Stop, AppID: x.AppID}, nil, 0)
			}
		case plan.Sleep:
			sleeps = append(sleeps, x)
		case plan.Start, plan.Restart, plan.Wake, plan.Replace, plan.Recover:
			ups = append(ups, x)
		case plan.NoAction:
			// The planner lists no such action.
		}
	}
	idle := make(map[string]time.Time, len(sleeps))
	for _, x := range sleeps {
		idle[x.AppID] = ps.lastActive(x.AppID)
	}
	for _, x := range plan.SleepOrder(sleeps, idle) {
		ps.dispatch(x, nil, 0)
	}
	return ups
}

// startAll admits the starts in ups into memory and hands them to the
// apps' workers, leaving alone an app whose worker acted since commit
// plannedAt (mu held).
func (ps *apps) startAll(ups []plan.InstanceAction, plannedAt uint64) {
	given, held := ps.memoryInUse()
	for _, x := range ups {
		if a := ps.byID[x.AppID]; a != nil && a.stale(plannedAt) {
			continue // its worker acted while this pass made volumes and the network
		}
		if in := ps.host.instance(x.AppID); in != nil {
			if need, ok := ps.admit(x, in, given, held); ok {
				given, held = given+need, held+need
				ps.dispatch(x, in, need)
			}
		}
	}
}
