// Package plan is the daemon's pure planner: given the document the host
// accepted and what the host observed, it says what to do. It does no I/O
// and keeps no state, so every rule is a row in a table test, and a pass
// that crashed halfway is repaired by planning again from what is observed.
//
// What it decides: per instance Start, Restart, GiveUp, Wake, Replace,
// Recover, Sleep, Stop, Forget, and when a restart or a failed sleep's
// retry comes due (nibrunner/backoff's rules over the attempts and times
// the daemon records); per volume Provision, Grow, Teardown, Blocked,
// RefuseShrink, RetryLater (a failed action's backoff) and NoDisk (no room
// on the disk); checkpoints Create/Delete; exports Write/Forget; what the
// report says of each instance (InstanceStatus), volume (VolumeStatus,
// UnlistedVolumes), checkpoint (CheckpointStatus) and export
// (ExportStatus); which guests a grow takes down (GrowTakesDown) and which
// export writes in flight are cancelled (ExportsToCancel). What it leaves
// to the daemon: how each action is carried out.
//
// Two rules protect tenant data. Instances are authoritative (an app the
// document does not list is stopped and forgotten) but volumes and
// checkpoints are not: they are deleted only on an explicit "absent", never
// because their entry vanished, so a truncated document deletes nothing.
package plan

import (
	"sort"
	"strconv"
	"time"

	"alpnib.dev/nibrunner/backoff"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/health"
)

// VMState is what the VMM shows of an app's guest.
type VMState int

const (
	// NoVM: no guest process.
	NoVM VMState = iota
	// Up: the guest's process runs.
	Up
	// Exited: the guest's process ended on its own.
	Exited
)

// Instance is what the host observed of one app.
type Instance struct {
	// DeploymentID is the deployment of the app's guest or snapshot (the
	// one last started), or "" if it never was.
	DeploymentID string
	VM           VMState
	// Health is the state machine's latest verdict while the VM is up.
	Health health.State
	// Sleeping: a snapshot of DeploymentID waits to be woken.
	Sleeping bool
	// Booted: DeploymentID was booted at least once (an on-request app
	// boots for its first deploy, then only on request).
	Booted bool
	// Budget is what the host remembers of the restarts of the deployment
	// it last started (Recorded); FailedAt is when the current failure was
	// first seen, or when the last start, restart or wake of it failed to
	// boot (zero: none). The restart rule reads both.
	Budget   backoff.Budget
	FailedAt time.Time
	// FailedSleeps counts the sleeps that failed in a row, the last at
	// SleepFailedAt; SleepBackoff spaces their retries.
	FailedSleeps  int
	SleepFailedAt time.Time
	// VolumeID is the volume the guest runs on.
	VolumeID string
	// StartedAt is when the guest was last started or woken.
	StartedAt time.Time
	// LastTrafficAt is when a request last reached the app (or an open
	// request ended); zero means none since StartedAt.
	LastTrafficAt time.Time
	// Busy: a request or stream is open right now.
	Busy bool
	// WantAwake: a request waits for the app (a wake); WantAsleep: an
	// operator asked it to sleep now.
	WantAwake, WantAsleep bool

	// The facts below are what InstanceStatus reads besides the above.

	// Recorded is the deployment the host's record of the app is about
	// (the one it last started, or is starting: while a replacement is
	// under way the guest is still the old one); "" when it has none.
	// Budget, FailedAt, FailReason and Message come from that record.
	Recorded string
	// FailReason is what the current failure was.
	FailReason string
	// Message is the latest sentence from acting on the app (a sleep or a
	// stop that failed).
	Message string
	// StartFailure is why the last start of deployment StartFailed failed
	// (layers that cannot be made ready, a start the VMM refused); it
	// holds until a start of that deployment succeeds.
	StartFailure, StartFailed string
	// Acting: an action is in flight on the app's worker.
	Acting bool
	// Note says why the app's start is held back this pass.
	Note string
}

// Volume is what the host observed of one volume.
type Volume struct {
	AppID     string
	SizeBytes uint64
	// AllocatedBytes is what it holds on disk (a sparse file's blocks):
	// the rest of SizeBytes it may still fill.
	AllocatedBytes uint64
}

// Observed is everything the planner reads besides the document.
type Observed struct {
	Now         time.Time
	Instances   map[string]Instance
	Volumes     map[string]Volume
	Checkpoints map[string]bool // checkpoint ids that exist
	Exports     map[string]bool // export ids that were written
	// Problems are instances the host cannot run as asked (ports, hostnames
	// this host does not carry); they are failed, never started.
	Problems map[string]string
	// VolumeFailures are the volume actions that failed, by volume id
	// (volgate.go): the same attempt waits for its backoff.
	VolumeFailures map[string]VolumeFailure
	// DiskFree is the free space of the disk volumes are made on; nil
	// when unknown, and then no volume is held back for room.
	DiskFree *uint64
}

// InstanceKind names an instance action. The zero value is NoAction; its
// String is the action's name as logs and sentences say it.
type InstanceKind int

// The instance actions. A daemon switch over them names every one (no
// default), so that a new kind is a compile-checked edit in each: see
// TestEveryInstanceKindHasAName.
const (
	// NoAction: the instance needs nothing now.
	NoAction InstanceKind = iota
	// Start boots an app that is not up (first boot of a deployment). A
	// start that fails is tried again as a Restart.
	Start
	// Restart boots again a guest that exited or failed its health check,
	// or an app whose start, restart or wake failed to boot (a failed
	// wake's snapshot is dropped, so this boot is cold); it is planned
	// once its backoff is over, and spends the restart budget.
	Restart
	// GiveUp: a failed guest's deployment has spent its restart budget.
	// The daemon records it (it holds until a new deployment) and takes
	// down a guest still up.
	GiveUp
	// Wake restores a sleeping app (or boots it cold when its snapshot
	// cannot be used); it never spends the budget.
	Wake
	// Replace takes down a guest (or snapshot) of another deployment and
	// starts the new one.
	Replace
	// Recover takes down a guest whose volume was lost, so the volume can
	// be provisioned again and the guest started on it.
	Recover
	// Sleep snapshots an on-request app whose sleep policy fired.
	Sleep
	// Stop takes an app down (and drops its snapshot) but remembers it.
	Stop
	// Forget stops an app the document no longer lists and drops its
	// record, slot and snapshot.
	Forget

	instanceKinds // how many there are
)

var instanceKindNames = [instanceKinds]string{
	NoAction: "none", Start: "start", Restart: "restart", GiveUp: "give-up", Wake: "wake",
	Replace: "replace", Recover: "recover", Sleep: "sleep", Stop: "stop", Forget: "forget",
}

// String is k's name ("start", "give-up"); a value outside the list says
// so with its number.
func (k InstanceKind) String() string {
	if k < 0 || k >= instanceKinds {
		return "InstanceKind(" + strconv.Itoa(int(k)) + ")"
	}
	return instanceKindNames[k]
}

// InstanceKinds is every instance action, NoAction excepted, in order.
func InstanceKinds() []InstanceKind {
	out := make([]InstanceKind, 0, instanceKinds-1)
	for k := Start; k < instanceKinds; k++ {
		out = append(out, k)
	}
	return out
}

// InstanceAction is one thing to do to one app.
type InstanceAction struct {
	Kind  InstanceKind
	AppID string
	// Restart is a Restart's place in the budget, which the daemon records
	// (backoff.Budget.Restarted) when the restart happens.
	Restart backoff.Decision
}

// VolumeKind names a volume action.
type VolumeKind string

// The volume actions.
const (
	Provision    VolumeKind = "provision"
	Grow         VolumeKind = "grow"
	Teardown     VolumeKind = "teardown"
	Blocked      VolumeKind = "blocked"       // absent, held back while an instance uses it
	RefuseShrink VolumeKind = "refuse-shrink" // asked smaller than it is
	RetryLater   VolumeKind = "retry-later"   // Tried failed; its backoff ends at RetryAt
	NoDisk       VolumeKind = "no-disk"       // Tried needs NeedBytes; the disk has RoomBytes
)

// VolumeAction is one thing to do to one volume.
type VolumeAction struct {
	Kind     VolumeKind
	VolumeID string
	// SizeBytes is the size asked for, rounded up to 512 bytes.
	SizeBytes uint64
	// By names the app holding back a Blocked teardown.
	By string
	// Tried is the action a RetryLater or NoDisk holds back; RetryAt is
	// when a RetryLater's backoff ends, after Failures failures in a row;
	// NeedBytes and RoomBytes are what a NoDisk needed and what the disk
	// had.
	Tried                VolumeKind
	RetryAt              time.Time
	Failures             int
	NeedBytes, RoomBytes uint64
}

// CheckpointAction creates or deletes one checkpoint.
type CheckpointAction struct {
	Create       bool // false: delete
	CheckpointID string
	VolumeID     string
}

// ExportAction writes or forgets one export.
type ExportAction struct {
	Write    bool // false: forget
	ExportID string
}

// Actions is a plan. Each list is sorted by id so plans compare and
// print the same way every time.
type Actions struct {
	Instances   []InstanceAction
	Volumes     []VolumeAction
	Checkpoints []CheckpointAction
	Exports     []ExportAction
	// RetryAt is the earliest time after Now at which a backoff ends (a
	// restart, a failed sleep's or volume's retry comes due): plan again
	// then. Zero when none waits.
	RetryAt time.Time
}

// Empty reports whether there is nothing to do.
func (a Actions) Empty() bool {
	return len(a.Instances) == 0 && len(a.Volumes) == 0 && len(a.Checkpoints) == 0 && len(a.Exports) == 0
}

// RoundSize rounds a volume size up to a multiple of 512 bytes.
func RoundSize(n uint64) uint64 { return (n + 511) &^ 511 }

// Plan computes the actions that take the host from obs towards doc.
func Plan(doc *desired.HostDesiredState, obs Observed) Actions {
	var a Actions
	wantVol := make(map[string]desired.DesiredVolume, len(doc.Volumes))
	for _, v := range doc.Volumes {
		wantVol[string(v.VolumeId)] = v
	}
	listed := make(map[string]bool, len(doc.Instances))
	for i := range doc.Instances {
		in := &doc.Instances[i]
		listed[string(in.AppId)] = true
		x, retry := planInstance(in, obs, wantVol)
		if x.Kind != NoAction {
			a.Instances = append(a.Instances, x)
		}
		if !retry.IsZero() && (a.RetryAt.IsZero() || retry.Before(a.RetryAt)) {
			a.RetryAt = retry
		}
	}
	for app := range obs.Instances {
		if !listed[app] {
			a.Instances = append(a.Instances, InstanceAction{Kind: Forget, AppID: app})
		}
	}
	var volRetry time.Time
	a.Volumes, volRetry = gateVolumes(planVolumes(doc, obs), doc, obs)
	if !volRetry.IsZero() && (a.RetryAt.IsZero() || volRetry.Before(a.RetryAt)) {
		a.RetryAt = volRetry
	}
	a.Checkpoints = planCheckpoints(doc, obs)
	a.Exports = planExports(doc, obs)
	sort.Slice(a.Instances, func(i, j int) bool { return a.Instances[i].AppID < a.Instances[j].AppID })
	return a
}

// App is Plan for one instance of doc: the action it needs now, if any.
// A wake asks it, so that the planner decides a wake as it decides
// everything else, without planning the whole host.
func App(doc *desired.HostDesiredState, in *desired.DesiredInstance, obs Observed) (InstanceAction, bool) {
	wantVol := map[string]desired.DesiredVolume{}
	for _, v := range doc.Volumes {
		if v.VolumeId == in.VolumeId {
			wantVol[string(v.VolumeId)] = v
		}
	}
	x, _ := planInstance(in, obs, wantVol)
	return x, x.Kind != NoAction
}

// planInstance is the action instance in needs now (NoAction for none), and
// when a backoff that holds one back ends (zero for none).
func planInstance(in *desired.DesiredInstance, obs Observed, wantVol map[string]desired.DesiredVolume) (InstanceAction, time.Time) {
	app := string(in.AppId)
	o, seen := obs.Instances[app]
	dep := string(in.DeploymentId)
	up := seen && o.VM == Up
	hasGuest := seen && (o.VM != NoVM || o.Sleeping)
	do := func(k InstanceKind) (InstanceAction, time.Time) {
		return InstanceAction{Kind: k, AppID: app}, time.Time{}
	}
	none := func() (InstanceAction, time.Time) { return InstanceAction{}, time.Time{} }

	if _, bad := obs.Problems[app]; bad {
		if hasGuest {
			return do(Stop)
		}
		return none()
	}
	if in.DesiredState == desired.StateStopped {
		if hasGuest {
			return do(Stop)
		}
		return none()
	}
	// A guest or snapshot of another deployment goes, whatever its state.
	if hasGuest && o.DeploymentID != dep {
		return do(Replace)
	}
	// The volume must be wanted present; a guest whose volume vanished
	// from the host is recovered.
	v, ok := wantVol[string(in.VolumeId)]
	volumeWanted := ok && v.DesiredState == desired.Present
	_, volumeThere := obs.Volumes[string(in.VolumeId)]
	if up && !volumeThere {
		return do(Recover)
	}
	if !volumeWanted {
		// Nothing to start on; the report says why.
		return none()
	}
	booted := seen && o.DeploymentID == dep && o.Booted
	outOfRestarts := o.outOfRestarts(dep)
	switch {
	case up && (o.Health == health.Failed || o.Health == health.Unhealthy):
		if outOfRestarts {
			return do(Stop)
		}
		return restart(in, o, obs.Now)
	case up:
		if in.DesiredState != desired.StateOnRequest || o.WantAwake {
			return none()
		}
		if o.WantAsleep {
			return do(Sleep)
		}
		if !sleepDue(in.EffectiveSleepPolicy(), o, obs.Now) {
			return none()
		}
		if at := o.sleepRetryAt(); obs.Now.Before(at) {
			return InstanceAction{}, at
		}
		return do(Sleep)
	case seen && o.VM == Exited:
		if outOfRestarts {
			return none()
		}
		return restart(in, o, obs.Now)
	case seen && o.Sleeping:
		if in.DesiredState == desired.StateRunning || o.WantAwake {
			return do(Wake)
		}
		return none() // on-request: it waits for a request
	case outOfRestarts:
		return none()
	case o.failedToStart(dep):
		// A start or restart of this deployment failed and left no guest:
		// it is tried again as a restart, after its backoff and within
		// its budget, never at once.
		return restart(in, o, obs.Now)
	case in.DesiredState == desired.StateOnRequest && booted:
		// Booted once and now down without a snapshot (slept and the
		// snapshot was discarded): it waits for a request like a sleeper,
		// and a request wakes it (cold).
		if o.WantAwake {
			return do(Wake)
		}
		return none()
	default:
		return do(Start)
	}
}

// RestartPolicy is in's restartPolicy as nibrunner/backoff reads it.
func RestartPolicy(in *desired.DesiredInstance) backoff.Policy {
	p := in.Config.RestartPolicy
	return backoff.Policy{
		MaxRestarts: int(p.MaxRestarts),
		Initial:     backoff.Millis(p.InitialBackoffMs),
		Max:         backoff.Millis(p.MaxBackoffMs),
		Factor:      p.BackoffFactor,
		ResetAfter:  backoff.Millis(p.ResetAfterMs),
	}
}

// NextRestart is the restart budget's word on failed instance o of in at
// now: out of restarts, or the restart's number and the earliest time it
// may happen. A failure the daemon has not timed yet counts from now.
func NextRestart(in *desired.DesiredInstance, o Instance, now time.Time) backoff.Decision {
	failedAt := o.FailedAt
	if failedAt.IsZero() {
		failedAt = now
	}
	return RestartPolicy(in).Next(o.Budget.ForDeployment(string(in.DeploymentId)), failedAt, now)
}

// restart decides on failed instance o: a restart now, a wait for its
// backoff, or giving up.
func restart(in *desired.DesiredInstance, o Instance, now time.Time) (InstanceAction, time.Time) {
	dec := NextRestart(in, o, now)
	switch {
	case dec.OutOfRestarts:
		return InstanceAction{Kind: GiveUp, AppID: string(in.AppId)}, time.Time{}
	case now.Before(dec.At):
		return InstanceAction{}, dec.At
	}
	return InstanceAction{Kind: Restart, AppID: string(in.AppId), Restart: dec}, time.Time{}
}

// outOfRestarts: the host recorded that deployment dep spent its restart
// budget.
func (o Instance) outOfRestarts(dep string) bool {
	return o.Budget.Exhausted && o.Budget.DeploymentID == dep
}

// failedToStart: the host recorded a failure of deployment dep (FailedAt)
// and no guest or snapshot is left, so the failure was a start, restart or
// wake that did not boot (or one the daemon was stopped in the middle of).
func (o Instance) failedToStart(dep string) bool {
	return o.VM == NoVM && !o.Sleeping && o.Recorded == dep && !o.FailedAt.IsZero()
}

// SleepBackoff spaces the retries of a sleep that failed: 1 s, doubling,
// at most five minutes apart, for as long as it fails. An operator's sleep
// (WantAsleep) does not wait for it.
var SleepBackoff = backoff.Policy{Initial: time.Second, Factor: 2, Max: 5 * time.Minute}

// sleepRetryAt is when a failed sleep may be tried again (zero: none
// failed).
func (o Instance) sleepRetryAt() time.Time {
	if o.FailedSleeps == 0 {
		return time.Time{}
	}
	return o.SleepFailedAt.Add(SleepBackoff.Delay(o.FailedSleeps))
}

// sleepDue reports whether an up instance's sleep policy has fired.
func sleepDue(p desired.SleepPolicy, o Instance, now time.Time) bool {
	switch p.Kind {
	case desired.SleepTrafficIdle:
		if o.Busy {
			return false
		}
		last := o.LastTrafficAt
		if last.IsZero() || last.Before(o.StartedAt) {
			last = o.StartedAt
		}
		return now.Sub(last) >= time.Duration(p.TimeoutMs)*time.Millisecond
	case desired.SleepMaxLifetime:
		ttl := time.Duration(p.TtlMs) * time.Millisecond
		if o.Busy {
			// An open request gets up to 30 s more.
			ttl += 30 * time.Second
		}
		return now.Sub(o.StartedAt) >= ttl
	}
	return false
}

func planVolumes(doc *desired.HostDesiredState, obs Observed) []VolumeAction {
	// Which apps use which volume: listed instances that are not stopped,
	// and any guest still up on it.
	users := map[string]string{}
	for _, in := range doc.Instances {
		users[string(in.VolumeId)] = string(in.AppId)
	}
	for app, o := range obs.Instances {
		if o.VM == Up && o.VolumeID != "" {
			if _, ok := users[o.VolumeID]; !ok {
				users[o.VolumeID] = app
			}
		}
	}
	var out []VolumeAction
	for _, v := range doc.Volumes {
		id := string(v.VolumeId)
		have, there := obs.Volumes[id]
		size := RoundSize(v.SizeBytes)
		switch v.DesiredState {
		case desired.Present:
			switch {
			case !there:
				out = append(out, VolumeAction{Kind: Provision, VolumeID: id, SizeBytes: size})
			case size > have.SizeBytes:
				out = append(out, VolumeAction{Kind: Grow, VolumeID: id, SizeBytes: size})
			case size < have.SizeBytes:
				out = append(out, VolumeAction{Kind: RefuseShrink, VolumeID: id, SizeBytes: size})
			}
		case desired.Absent:
			if !there {
				continue
			}
			if app, used := users[id]; used {
				out = append(out, VolumeAction{Kind: Blocked, VolumeID: id, By: app})
				continue
			}
			out = append(out, VolumeAction{Kind: Teardown, VolumeID: id})
		}
	}
	// Volumes the document does not mention are left alone: see the
	// package doc.
	sort.Slice(out, func(i, j int) bool { return out[i].VolumeID < out[j].VolumeID })
	return out
}

func planCheckpoints(doc *desired.HostDesiredState, obs Observed) []CheckpointAction {
	var out []CheckpointAction
	for _, c := range doc.Checkpoints {
		id := string(c.CheckpointId)
		exists := obs.Checkpoints[id]
		switch {
		case c.DesiredState == desired.Present && !exists:
			if _, ok := obs.Volumes[string(c.VolumeId)]; ok {
				out = append(out, CheckpointAction{Create: true, CheckpointID: id, VolumeID: string(c.VolumeId)})
			}
		case c.DesiredState == desired.Absent && exists:
			out = append(out, CheckpointAction{CheckpointID: id, VolumeID: string(c.VolumeId)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CheckpointID < out[j].CheckpointID })
	return out
}

func planExports(doc *desired.HostDesiredState, obs Observed) []ExportAction {
	var out []ExportAction
	listed := map[string]bool{}
	for _, e := range doc.Exports {
		id := string(e.ExportId)
		listed[id] = true
		written := obs.Exports[id]
		switch {
		case e.DesiredState == desired.Present && !written:
			if _, ok := obs.Volumes[string(e.VolumeId)]; ok {
				out = append(out, ExportAction{Write: true, ExportID: id})
			}
		case e.DesiredState == desired.Absent && written:
			out = append(out, ExportAction{ExportID: id})
		}
	}
	// Exports are authoritative: dropped from the list forgets them.
	for id, written := range obs.Exports {
		if written && !listed[id] {
			out = append(out, ExportAction{ExportID: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ExportID < out[j].ExportID })
	return out
}
