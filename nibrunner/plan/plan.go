// Package plan is the daemon's pure planner: given the document the host
// accepted and what the host observed, it says what to do. It does no I/O
// and keeps no state, so every rule is a row in a table test, and a pass
// that crashed halfway is repaired by planning again from what is observed.
//
// What it decides: per instance Start, Restart, Wake, Replace, Recover,
// Sleep, Stop, Forget; per volume Provision, Grow, Teardown, Blocked,
// RefuseShrink; checkpoints Create/Delete; exports Write/Forget. What it
// leaves to the daemon: whether a start is admitted (memory), when a restart
// may happen (backoff), and how each action is carried out.
//
// Two rules protect tenant data. Instances are authoritative (an app the
// document does not list is stopped and forgotten) but volumes and
// checkpoints are not: they are deleted only on an explicit "absent", never
// because their entry vanished, so a truncated document deletes nothing.
package plan

import (
	"sort"
	"time"

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
	// OutOfRestarts: this deployment spent its restart budget.
	OutOfRestarts bool
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
	// Restarts, WindowRestarts, FailedAt, FailReason and Message come from
	// that record.
	Recorded string
	// Restarts counts every restart of Recorded (reported restartCount);
	// WindowRestarts those since the budget's count last reset.
	Restarts, WindowRestarts int
	// FailedAt is when the current failure was first seen (zero: none),
	// FailReason what it was.
	FailedAt   time.Time
	FailReason string
	// RestartAt is when a restart held back by backoff comes due.
	RestartAt time.Time
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
}

// InstanceKind names an instance action.
type InstanceKind string

// The instance actions.
const (
	// Start boots an app that is not up (first boot of a deployment).
	Start InstanceKind = "start"
	// Restart boots again a guest that exited or failed its health check;
	// it spends the restart budget and waits for backoff.
	Restart InstanceKind = "restart"
	// Wake restores a sleeping app (or boots it cold when its snapshot
	// cannot be used); it never spends the budget.
	Wake InstanceKind = "wake"
	// Replace takes down a guest (or snapshot) of another deployment and
	// starts the new one.
	Replace InstanceKind = "replace"
	// Recover takes down a guest whose volume was lost, so the volume can
	// be provisioned again and the guest started on it.
	Recover InstanceKind = "recover"
	// Sleep snapshots an on-request app whose sleep policy fired.
	Sleep InstanceKind = "sleep"
	// Stop takes an app down (and drops its snapshot) but remembers it.
	Stop InstanceKind = "stop"
	// Forget stops an app the document no longer lists and drops its
	// record, slot and snapshot.
	Forget InstanceKind = "forget"
)

// InstanceAction is one thing to do to one app.
type InstanceAction struct {
	Kind  InstanceKind
	AppID string
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
)

// VolumeAction is one thing to do to one volume.
type VolumeAction struct {
	Kind     VolumeKind
	VolumeID string
	// SizeBytes is the size asked for, rounded up to 512 bytes.
	SizeBytes uint64
	// By names the app holding back a Blocked teardown.
	By string
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
		app := string(in.AppId)
		listed[app] = true
		if act, ok := planInstance(in, obs, wantVol); ok {
			a.Instances = append(a.Instances, InstanceAction{Kind: act, AppID: app})
		}
	}
	for app := range obs.Instances {
		if !listed[app] {
			a.Instances = append(a.Instances, InstanceAction{Kind: Forget, AppID: app})
		}
	}
	a.Volumes = planVolumes(doc, obs)
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
	act, ok := planInstance(in, obs, wantVol)
	return InstanceAction{Kind: act, AppID: string(in.AppId)}, ok
}

func planInstance(in *desired.DesiredInstance, obs Observed, wantVol map[string]desired.DesiredVolume) (InstanceKind, bool) {
	app := string(in.AppId)
	o, seen := obs.Instances[app]
	dep := string(in.DeploymentId)
	up := seen && o.VM == Up
	hasGuest := seen && (o.VM != NoVM || o.Sleeping)

	if _, bad := obs.Problems[app]; bad {
		if hasGuest {
			return Stop, true
		}
		return "", false
	}
	if in.DesiredState == desired.StateStopped {
		if hasGuest {
			return Stop, true
		}
		return "", false
	}
	// A guest or snapshot of another deployment goes, whatever its state.
	if hasGuest && o.DeploymentID != dep {
		return Replace, true
	}
	// The volume must be wanted present; a guest whose volume vanished
	// from the host is recovered.
	v, ok := wantVol[string(in.VolumeId)]
	volumeWanted := ok && v.DesiredState == desired.Present
	_, volumeThere := obs.Volumes[string(in.VolumeId)]
	if up && !volumeThere {
		return Recover, true
	}
	if !volumeWanted {
		// Nothing to start on; the report says why.
		return "", false
	}
	booted := seen && o.DeploymentID == dep && o.Booted
	outOfRestarts := seen && o.DeploymentID == dep && o.OutOfRestarts
	switch {
	case up && (o.Health == health.Failed || o.Health == health.Unhealthy):
		if outOfRestarts {
			return Stop, true
		}
		return Restart, true
	case up:
		if in.DesiredState == desired.StateOnRequest && !o.WantAwake && (o.WantAsleep || sleepDue(in.EffectiveSleepPolicy(), o, obs.Now)) {
			return Sleep, true
		}
		return "", false
	case seen && o.VM == Exited:
		if outOfRestarts {
			return "", false
		}
		return Restart, true
	case seen && o.Sleeping:
		if in.DesiredState == desired.StateRunning || o.WantAwake {
			return Wake, true
		}
		return "", false // on-request: it waits for a request
	case outOfRestarts:
		return "", false
	case in.DesiredState == desired.StateOnRequest && booted:
		// Booted once and now down without a snapshot (slept and the
		// snapshot was discarded): it waits for a request like a sleeper,
		// and a request wakes it (cold).
		if o.WantAwake {
			return Wake, true
		}
		return "", false
	default:
		return Start, true
	}
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
