// Package daemon is nibrunnerd's converge loop: observe → plan → apply →
// persist → report, over the small interfaces in ports.go. It is
// level-triggered: every pass recomputes what to do from the accepted
// document and what it observes (guests, volumes, checkpoints, exports), so
// a crash at any point — even between starting a guest and recording it —
// is repaired by the next pass, which adopts whatever is running.
//
// Passes run when the document changes (the watcher), when a health probe
// changes an instance's state, when a backoff the planner waits for ends
// (a restart, a failed sleep's retry), and on a resync tick, so an exit nobody announced is noticed within one tick.
package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/daemon/manager"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/jobs"
	"alpnib.dev/nibrunner/metrics"
	"alpnib.dev/nibrunner/perm"
	"alpnib.dev/nibrunner/plan/explain"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/watch"
)

// Config is what the loop needs to know about its host.
type Config struct {
	// HostID is reported until a document names the host.
	HostID string
	// DesiredPath is the watched desired.json, when Source is nil.
	DesiredPath string
	// Source yields the readings of desired.json (default: a watch.Watcher
	// of DesiredPath). Each reading carries its source's problem, which the
	// report's message says (fleet.Poller: an S3 object that cannot be
	// read).
	Source Source
	// StateDir holds state.db and reported.json.
	StateDir string
	// MaxApps bounds the slots handed out.
	MaxApps int
	// CapacityMiB is the memory guests may use; VCPUs and CacheBytes are
	// reported as capacity.
	CapacityMiB uint64
	// MemoryOvercommit is [admission] memory_overcommit: the memory given
	// to guests may reach CapacityMiB times it, while what they hold fits
	// in CapacityMiB (0 or 1: the given memory alone decides).
	MemoryOvercommit float64
	VCPUs            uint32
	CacheBytes       uint64
	// AgentVersion and GuestImageVersion are reported in versions.
	AgentVersion      string
	GuestImageVersion string
	// Limits says what this host carries per instance (proxies, ports).
	Limits desired.HostLimits
	// UserNetwork: guests get no tap and /30 but the VMM's user-mode
	// network, which forwards the slot's host ports on loopback (hosts
	// without root networking, tests). The report then shows no guestIpv4.
	UserNetwork bool
	// DNS are the name servers guests on a tap are given ([network]
	// dns_servers).
	DNS []netip.Addr
	// BackgroundJobs bounds the checkpoints and exports running at once
	// (default 2).
	BackgroundJobs int
	// MaxConcurrentVMStarts bounds the VMM operations (starts, wakes,
	// stops, sleeps) in flight at once (default: the host's CPUs, see
	// DefaultMaxConcurrentVMStarts).
	MaxConcurrentVMStarts int
	// VolumeJobs bounds the volume work (making, seeding, growing,
	// deleting a volume) running at once (default 2); VolumeTimeout is
	// one such work's budget (default 6 h: a seed of many GiB from a slow
	// store), apart from the pass's; VolumeSettle is how long a pass waits
	// for the volume work it handed out before going on without it
	// (default 2 s).
	VolumeJobs                  int
	VolumeTimeout, VolumeSettle time.Duration
	// OpTimeout bounds one adapter call of a pass or an app's worker
	// (default 60 s), so one stuck guest cannot hold up the host.
	OpTimeout time.Duration
	// LayerGrace is how long a cached layer no document references is
	// kept (default an hour: a document rolled back finds it still there).
	LayerGrace time.Duration
	// LayerCacheBytes is the layer cache's budget (0: none). Over it, a
	// layer no document references is removed without waiting for
	// LayerGrace.
	LayerCacheBytes int64
	// Resync is the longest time between two passes (default 2 s).
	Resync time.Duration
	// Backstop and Debounce tune the watcher (defaults in package watch).
	Backstop, Debounce time.Duration
	// Clock is the daemon's one clock (default clock.Real): the passes,
	// the workers, the health probers and the job runner read the time
	// from it, and the resync, retry and probe timers wait on it.
	Clock clock.Clock
	// Logf logs one line (default log.Printf).
	Logf func(format string, args ...any)
}

// Source yields readings of desired.json on out until ctx ends: at start,
// and whenever what it reads or what it says of itself changes.
type Source interface {
	Run(ctx context.Context, out chan<- watch.Document) error
}

// Deps are the adapters the loop drives.
type Deps struct {
	VMM         vmm.VMM
	Layers      Layers
	Volumes     Volumes
	Network     Network
	Router      Router
	Checkpoints Checkpoints
	Exports     Exports
	// Traffic is optional; without it an app's traffic is unknown and a
	// traffic-idle policy counts from the guest's start.
	Traffic Traffic
	// Ports is optional: the raw relay ([proxy.raw]), given the apps' raw
	// ports whenever they change (not on the user network, where QEMU
	// forwards them itself).
	Ports route.PortRouter
	// Metrics is optional: told of each pass and each refused document.
	Metrics metrics.Recorder
	// Schedule is optional: scheduled checkpoints ([checkpoints.schedule]),
	// run as a component after the jobs, stopped before them.
	Schedule Schedule
	// Travel is optional: without it a checkpoint carries no memory
	// snapshot, and an app restored from one boots cold.
	Travel Travel
}

// Daemon is one host's converge loop.
//
// It composes components, as controller-runtime's manager runs its
// Reconcilers and Runnables: apps (apps.go), volumes (volumes.go), the
// route applier (routes.go) and the job runner, each started and stopped
// by the manager (components). What remains on Daemon is the loop that
// drives them: the document's readings (Offer, accept.go), the pass
// (Pass), the report, and the public calls (Wake, Sleep, Backend).
//
// A pass observes the host holding no lock, then decides under mu (the
// pure planner over what it observed and what the daemon remembers), then
// acts: each app's actions run on that app's worker, a goroutine that holds
// no daemon-wide lock while it calls the VMM or fetches layers, and commits
// what happened under mu, briefly. The request path takes no lock at all:
// it reads the published route table (routes.table).
//
// The fields are grouped as tailscale's LocalBackend groups its own: what
// is immutable or safe on its own first, then the components, then each
// lock and what it guards, every guarded field marked.
//
// The locks, in the order they may be taken (never the other way):
// passMu, then offerMu, then mu. gate.mu, prober.mu and the job runner's
// lock are leaves, taken under mu at most, and never held across I/O. No
// lock is held while the router and the raw relay are handed a table: the
// route applier (routes.go) calls them from its own goroutine.
type Daemon struct {
	// Immutable after Open, or safe to use without mu (each says).
	cfg  Config
	deps Deps
	db   *db.DB
	// mgr owns every goroutine the daemon starts: the components in the
	// order Open declares them (components), and the loop Run adds. Its
	// pools are the components': apps.workers, apps.probers and
	// vols.workers.
	mgr *manager.Manager
	// jobs runs checkpoints and exports beside the passes
	// (background.go); its lock is a leaf.
	jobs *jobs.Runner
	// kick asks for a pass (Kick); it is only sent on and received from.
	kick chan struct{}

	// The components. apps and vols keep their state under mu (apps.go,
	// volumes.go say why one lock); routes keeps the published table,
	// read without a lock, and what it hands the router, on its own
	// goroutine (routes.go).
	apps   *apps
	vols   *volumes
	routes routeApplier

	// passMu lets one pass run at a time; nothing else takes it. It is
	// held for the whole pass, I/O included: only another pass waits.
	// It guards loop.listedAt.
	passMu sync.Mutex
	// offerMu lets one reading of desired.json be taken at a time (Offer;
	// a pass's recordAgain tries it and skips when it is held). It is held
	// across the decode, the hash and the database write of a document,
	// so nothing else may wait for it: a wake, a sleep and a commit never
	// take it.
	offerMu sync.Mutex
	// mu guards the fields below (each says what of it is not), and the
	// state of apps, vols and routes that their comments mark (mu). No I/O
	// happens under it: no VMM, layer, volume, network, database, router
	// or relay call, no file read or write, no decode of a document. What
	// it covers is copied out, the call made without it, and the result
	// committed under it again.
	mu sync.Mutex
	// acc is the accepted document, and what the daemon says of the last
	// reading of desired.json (accept.go) (mu).
	acc docState
	// loop is the passes' count, the commits' sequence, and the plan's
	// next backoff (pass.go) (mu, but listedAt: passMu).
	loop loopState
	// layers is when each layer was last referenced, for the layer
	// cache's pruning (prune.go) (mu).
	layers layerUses
}

// Open opens the state database in cfg.StateDir and loads what the daemon
// remembers: the last accepted document (re-applied first), records,
// slots, meters, deleted volumes and volumes' last failures.
func Open(ctx context.Context, cfg Config, deps Deps) (*Daemon, error) {
	cfg.Clock = clock.Or(cfg.Clock)
	if cfg.Logf == nil {
		cfg.Logf = log.Printf
	}
	cfg.HostID = hostID(cfg.HostID)
	if cfg.Resync <= 0 {
		cfg.Resync = 2 * time.Second
	}
	if deps.Network == nil {
		deps.Network = NoNetwork{}
	}
	if deps.Router == nil {
		deps.Router = NoRouter{}
	}
	if deps.VMM == nil || deps.Layers == nil || deps.Volumes == nil || deps.Checkpoints == nil || deps.Exports == nil {
		return nil, errors.New("daemon: VMM, Layers, Volumes, Checkpoints and Exports are required")
	}
	if cfg.BackgroundJobs <= 0 {
		cfg.BackgroundJobs = 2
	}
	if cfg.VolumeJobs <= 0 {
		cfg.VolumeJobs = 2
	}
	if cfg.VolumeTimeout <= 0 {
		cfg.VolumeTimeout = 6 * time.Hour
	}
	if cfg.VolumeSettle <= 0 {
		cfg.VolumeSettle = 2 * time.Second
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = opTimeout
	}
	if err := os.MkdirAll(cfg.StateDir, perm.Dir); err != nil {
		return nil, fmt.Errorf("state folder: %w", err)
	}
	store, err := db.Open(ctx, filepath.Join(cfg.StateDir, StateDBName))
	if err != nil {
		return nil, err
	}
	if cfg.LayerGrace <= 0 {
		cfg.LayerGrace = time.Hour
	}
	if cfg.MaxConcurrentVMStarts <= 0 {
		cfg.MaxConcurrentVMStarts = DefaultMaxConcurrentVMStarts()
	}
	d := &Daemon{
		cfg: cfg, deps: deps, db: store,
		kick: make(chan struct{}, 1),
	}
	d.acc.record = store.SetAccepted
	d.loop.passed = make(chan struct{})
	d.vols = newVolumes(cfg, deps.Volumes, store, &d.mu, &d.loop.seq, d)
	d.apps = newApps(cfg, deps, store, &d.mu, &d.loop.seq, appHost(d))
	d.jobs = jobs.New(jobs.Options{Concurrency: cfg.BackgroundJobs, Clock: cfg.Clock, OnEnd: func(string, jobs.Status) { d.Kick() }})
	if err := d.load(ctx); err != nil {
		store.Close()
		return nil, err
	}
	if err := d.components(); err != nil {
		store.Close()
		return nil, err
	}
	return d, nil
}

// components declares the daemon's components to its manager and starts
// them. They start in this order and stop in the reverse one, each ended
// before the one above it is asked to stop (Close):
//
//   - state: the database, closed last, once the last meters are written
//     and every worker has recorded what it did;
//   - routes: the route applier (routes.go), which hands the router and
//     the relay what the others publish;
//   - probers: the health probers (probe.go), which publish and kick;
//   - app workers: one goroutine per action on an app (act.go), which
//     start probers;
//   - volume workers: one per action on a volume (volwork.go), which take
//     guests down for a grow;
//   - jobs: the checkpoints and exports (background.go): a frozen guest
//     is thawed before the workers stop;
//   - scheduled checkpoints (Deps.Schedule), when set, which read the
//     volumes as the jobs do.
//
// Run adds the loop after them (the passes, the document's source and
// its offers), so the loop stops first.
func (d *Daemon) components() error {
	d.mgr = manager.New()
	d.routes.ask = make(chan struct{}, 1)
	for _, c := range []struct {
		name string
		r    manager.Runnable
	}{
		{"state", manager.RunnableFunc(d.keepState)},
		{"routes", manager.RunnableFunc(d.routes.run(d))},
		{"probers", d.apps.probers},
		{"app workers", d.apps.workers},
		{"volume workers", d.vols.workers},
		{"jobs", manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			d.jobs.Close()
			return nil
		})},
	} {
		if _, err := d.mgr.Add(c.name, c.r); err != nil {
			return err
		}
	}
	if s := d.deps.Schedule; s != nil {
		run := func(ctx context.Context) error { return s.Run(ctx, scheduleHost{d}) }
		if _, err := d.mgr.Add("scheduled checkpoints", manager.RunnableFunc(run)); err != nil {
			return err
		}
	}
	return d.mgr.Start()
}

func (d *Daemon) load(ctx context.Context) error {
	acc, ok, err := d.db.Accepted(ctx)
	if err != nil {
		return err
	}
	if ok {
		doc, warnings, err := desired.DecodeFields(acc.Document, desired.FieldWarn)
		d.acc.warnings = reported.WarningsOf(warnings)
		d.acc.docWarnings = d.acc.warnings
		if err != nil {
			// This daemon's rules refuse what an older one accepted: keep
			// the host as it is and say so.
			d.acc.refusal = reported.Truncate(explain.RefusedBefore(err))
		} else {
			d.setDoc(d.index(doc, acc.Digest))
		}
	}
	if err := d.apps.load(ctx); err != nil {
		return err
	}
	return d.vols.load(ctx)
}

// indexed is an accepted document with what the daemon reads of it often:
// its instances by app, and why instances are failed by the document
// itself. It is made outside mu (index), and put in force under it.
type indexed struct {
	doc      *desired.HostDesiredState
	digest   string
	byApp    map[string]*desired.DesiredInstance
	problems map[string]string
}

// index makes doc's indexes; it reads only the host's limits, so it needs
// no lock.
func (d *Daemon) index(doc *desired.HostDesiredState, digest string) indexed {
	x := indexed{doc: doc, digest: digest, problems: map[string]string{},
		byApp: make(map[string]*desired.DesiredInstance, len(doc.Instances))}
	for i := range doc.Instances {
		x.byApp[string(doc.Instances[i].AppId)] = &doc.Instances[i]
	}
	for app, why := range desired.InstanceProblems(doc, d.cfg.Limits) {
		x.problems[string(app)] = why
	}
	return x
}

// setDoc puts x in force (mu held).
func (d *Daemon) setDoc(x indexed) {
	doc := x.doc
	d.acc.doc, d.acc.digest, d.acc.byApp, d.acc.problems = doc, x.digest, x.byApp, x.problems
	d.vols.named(doc)
}

// layerFetches bounds the layer preparations in flight (each may download
// an object of gigabytes); they run on the apps' workers, outside the VM
// gate, so a slow fetch never holds back another app's start or wake.
const layerFetches = 4

// DefaultMaxConcurrentVMStarts is max_concurrent_vm_starts when the host
// configuration does not set it: one per CPU. A software-emulated (TCG)
// boot keeps a core busy for its whole ~10 s, so more boots than cores in
// flight only make each one slower (and late for its health check's grace
// period); under KVM a boot is short and the bound is rarely reached.
func DefaultMaxConcurrentVMStarts() int { return max(runtime.NumCPU(), 1) }

// Close stops the daemon's components in the reverse of the order they
// were declared (components): the loop, the checkpoints and exports in
// flight (a frozen guest is thawed first), the workers (an action in
// flight is abandoned; the next daemon's first pass repairs it; volume
// work that ended meanwhile is recorded first), the probers, the route
// applier, and last the database. A wake or sleep waiting ends at once
// with ErrClosed. Guests keep running.
func (d *Daemon) Close() error { return d.mgr.Stop() }

// closing reports whether Close began.
func (d *Daemon) closing() bool {
	select {
	case <-d.mgr.Stopping():
		return true
	default:
		return false
	}
}

// keepState is the state component: it holds the database open until
// every other component ended, then writes the last meters and closes it.
func (d *Daemon) keepState(ctx context.Context) error {
	<-ctx.Done()
	d.apps.closed()
	return d.db.Close()
}

// recordGrace bounds what is recorded after the daemon began closing (the
// last meters, the outcome of volume work that ended meanwhile).
const recordGrace = 10 * time.Second

// now is the daemon's time, in UTC.
func (d *Daemon) now() time.Time { return d.cfg.Clock.Now().UTC() }

// Kick asks for a pass soon.
func (d *Daemon) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Offer hands the daemon a reading of desired.json: accepted when it
// decodes, refused whole otherwise (the last accepted document stays in
// force and the report's message says why). The decode, the hash and the
// database write happen holding offerMu alone; mu is taken only to read
// what is in force and to swap the accepted document in, so a wake, a
// sleep or a worker's commit never waits for a large document.
func (d *Daemon) Offer(ctx context.Context, doc watch.Document) error {
	d.offerMu.Lock()
	defer d.offerMu.Unlock()
	d.mu.Lock()
	d.acc.sourceProblem = doc.Problem
	d.mu.Unlock()
	if doc.Status() {
		return nil // the source said only how it is: the host keeps what it has
	}
	// What the host does meanwhile comes before the reasons, which can be
	// many: the report's message is cut at reported.Truncate's length,
	// and the log keeps the whole.
	if doc.Err != nil {
		d.mu.Lock()
		d.acc.noDocument = errors.Is(doc.Err, watch.ErrMissing)
		d.acc.unrecorded = nil // the file no longer holds it
		d.acc.refusal = reported.Truncate(explain.NoDocument(d.keeping(), doc.Err))
		d.acc.warnings = nil
		d.mu.Unlock()
		return nil
	}
	sum := sha256.Sum256(doc.Data)
	digest := hex.EncodeToString(sum[:])
	d.mu.Lock()
	d.acc.noDocument = false
	inForce := digest == d.acc.digest && d.acc.doc != nil
	if inForce {
		// Read again, unchanged (a backstop, a rewrite): nothing to
		// decode.
		d.acc.refusal, d.acc.unrecorded = "", nil
		d.acc.warnings = d.acc.docWarnings
	}
	d.mu.Unlock()
	if inForce {
		return nil
	}
	parsed, ws, err := desired.DecodeFields(doc.Data, desired.FieldWarn)
	warnings := reported.WarningsOf(ws)
	for _, w := range warnings {
		d.cfg.Logf("nibrunnerd: desired.json: warning: %s", w)
	}
	if err != nil {
		d.mu.Lock()
		d.acc.unrecorded = nil
		d.acc.warnings = warnings
		whole := explain.Refused(d.keeping(), explain.ReasonsText(desired.Reasons(err)))
		d.acc.refusal = reported.Truncate(whole)
		d.mu.Unlock()
		if d.deps.Metrics != nil {
			d.deps.Metrics.DocumentRefused()
		}
		d.cfg.Logf("nibrunnerd: %s", whole)
		return nil
	}
	return d.take(ctx, unrecorded{data: doc.Data, parsed: parsed, digest: digest, warnings: warnings})
}

// keeping says what the host does while it takes no new document (mu
// held).
func (d *Daemon) keeping() string {
	if d.acc.doc == nil {
		return explain.Keeping("")
	}
	return explain.Keeping(d.acc.digest)
}

// Run reads the document's source and runs passes until ctx ends. Each
// reading is offered on a goroutine of its own, which asks for a pass
// once it is taken: a large document being decoded and recorded holds up
// no pass.
func (d *Daemon) Run(ctx context.Context) error {
	src := d.cfg.Source
	if src == nil {
		// Rewrites: a document that could not be recorded is offered
		// again when its file is written again, even unchanged.
		src = &watch.Watcher{Path: d.cfg.DesiredPath, Backstop: d.cfg.Backstop, Debounce: d.cfg.Debounce, Rewrites: true}
	}
	// The accepted document is re-applied first, before any reading.
	d.passAndLog(ctx)

	// The loop's parts are the manager's, added after the components:
	// the passes, the offers, and last the source, which stops first (it
	// hands the offers what it reads).
	docs := make(chan watch.Document)
	var added []*manager.Handle
	defer func() {
		for i := len(added) - 1; i >= 0; i-- {
			added[i].Stop()
		}
	}()
	for _, c := range []struct {
		name string
		r    manager.RunnableFunc
	}{
		{"passes", d.resync},
		{"offers", func(ctx context.Context) error { d.offers(ctx, docs); return nil }},
		{"document source", func(ctx context.Context) error {
			if err := src.Run(ctx, docs); err != nil {
				return fmt.Errorf("read the document: %w", err)
			}
			return nil
		}},
	} {
		h, err := d.mgr.Add(c.name, c.r)
		if err != nil {
			return err
		}
		added = append(added, h)
	}
	select {
	case <-ctx.Done():
		return nil
	case <-added[0].Done():
		return added[0].Err()
	case <-added[2].Done():
		return added[2].Err()
	}
}

// offers offers the daemon each reading of desired.json until ctx ends,
// and asks for a pass once it is taken.
func (d *Daemon) offers(ctx context.Context, docs <-chan watch.Document) {
	for {
		select {
		case <-ctx.Done():
			return
		case doc := <-docs:
			if err := d.Offer(ctx, doc); err != nil {
				d.cfg.Logf("nibrunnerd: %v", err)
			}
			d.Kick()
		}
	}
}

// resync runs a pass whenever one is asked (Kick), a backoff the plan
// waits for ends, or Resync passed since the last, until ctx ends.
func (d *Daemon) resync(ctx context.Context) error {
	timer := d.cfg.Clock.NewTimer(d.cfg.Resync)
	defer timer.Stop()
	for {
		// The next pass is at most Resync away, sooner when a backoff
		// the plan waits for ends first.
		wait := d.cfg.Resync
		if at, ok := d.nextTimer(); ok {
			wait = min(wait, max(clock.Until(d.cfg.Clock, at), 0))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-d.kick:
		case <-timer.C():
		}
		d.passAndLog(ctx)
	}
}

func (d *Daemon) passAndLog(ctx context.Context) {
	if err := d.Pass(ctx); err != nil && ctx.Err() == nil {
		d.cfg.Logf("nibrunnerd: pass: %v", err)
	}
}

func (d *Daemon) nextTimer() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loop.retryAt, !d.loop.retryAt.IsZero()
}

// hostID makes name (the machine's hostname, until a document names the
// host) a valid identifier: ^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$.
func hostID(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	s := strings.TrimLeft(string(b), "-_")
	if len(s) > 63 {
		s = s[:63]
	}
	if s == "" {
		return "host"
	}
	return s
}
