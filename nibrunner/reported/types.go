// Package reported is the contract of reported.json: what the host says
// about itself after every pass. Optional fields are omitted, never
// written empty; status words are typed constants so there is one place
// that spells them.
package reported

import (
	"fmt"
	"time"

	"alpnib.dev/nibrunner/desired"
)

// MaxMessageLen is the longest message a report carries, in characters.
const MaxMessageLen = 512

// HostState is the host's own state.
type HostState string

// The host states.
const (
	HostRegistering HostState = "registering"
	HostReady       HostState = "ready"
	HostDraining    HostState = "draining"
	HostUnreachable HostState = "unreachable"
)

// VolumeState is a volume's state.
type VolumeState string

// The volume states.
const (
	VolumePending  VolumeState = "pending"
	VolumeReady    VolumeState = "ready"
	VolumeDetached VolumeState = "detached"
	VolumeDeleted  VolumeState = "deleted"
	VolumeFailed   VolumeState = "failed"
)

// InstanceState is an instance's state.
type InstanceState string

// The instance states.
const (
	InstancePending   InstanceState = "pending"
	InstanceStarting  InstanceState = "starting"
	InstanceRunning   InstanceState = "running"
	InstanceUnhealthy InstanceState = "unhealthy"
	InstanceStopping  InstanceState = "stopping"
	InstanceStopped   InstanceState = "stopped"
	InstanceIdle      InstanceState = "idle"
	InstanceFailed    InstanceState = "failed"
)

// CheckpointState is a checkpoint's state.
type CheckpointState string

// The checkpoint states.
const (
	CheckpointPending CheckpointState = "pending"
	CheckpointReady   CheckpointState = "ready"
	CheckpointFailed  CheckpointState = "failed"
)

// ExportState is an export's state.
type ExportState string

// The export states.
const (
	ExportPending   ExportState = "pending"
	ExportPreparing ExportState = "preparing"
	ExportReady     ExportState = "ready"
	ExportFailed    ExportState = "failed"
)

// HostReportedState is reported.json, written atomically after every pass.
type HostReportedState struct {
	HostId      desired.HostId `json:"hostId"`
	ReportedAt  time.Time      `json:"reportedAt"`
	State       HostState      `json:"state"`
	Capacity    Resources      `json:"capacity"`
	Allocatable Resources      `json:"allocatable"`
	// Memory is the memory its guests were given and hold (ours).
	Memory   *HostMemory `json:"memory,omitempty" nib:"optional"`
	Versions Versions    `json:"versions"`
	// AcceptedDigest is the lowercase hex sha-256 of the accepted
	// document's bytes (ours); absent until a document was accepted.
	AcceptedDigest desired.Sha256Digest `json:"acceptedDigest,omitempty" nib:"optional"`
	Volumes        []Volume             `json:"volumes"`
	Instances      []Instance           `json:"instances"`
	Checkpoints    []Checkpoint         `json:"checkpoints"`
	Exports        []Export             `json:"exports"`
	// Message is set while the last document was refused, and cleared once
	// a readable one is taken.
	Message string `json:"message,omitempty" nib:"optional,rule=message"`
	// Warnings are the properties the last document read has that its
	// types have not, each as "path: unknown property, ignored: did you
	// mean …?" (ours): at most MaxWarnings, each at most MaxMessageLen
	// characters. Absent when there are none.
	Warnings []string `json:"warnings,omitempty" nib:"optional"`
}

// MaxWarnings is the most warnings a report carries; a last one says how
// many more there were.
const MaxWarnings = 32

// Resources is what a host has (capacity) or has left (allocatable).
type Resources struct {
	VcpuCount  uint32 `json:"vcpuCount"`
	MemoryMib  uint64 `json:"memoryMib"`
	CacheBytes uint64 `json:"cacheBytes"`
}

// Versions names what this host runs.
type Versions struct {
	Agent      string `json:"agent"`
	GuestImage string `json:"guestImage"`
	Vmm        string `json:"vmm"`
}

// Volume is one volume's report. A deleted volume keeps being reported.
type Volume struct {
	VolumeId   desired.VolumeId `json:"volumeId"`
	AppId      desired.AppId    `json:"appId"`
	State      VolumeState      `json:"state"`
	SizeBytes  uint64           `json:"sizeBytes"`
	DevicePath string           `json:"devicePath,omitempty" nib:"optional"`
	Usage      *Usage           `json:"usage,omitempty" nib:"optional"`
	Message    string           `json:"message,omitempty" nib:"optional,rule=message"`
	// Checkpoints are the volume's scheduled checkpoints in the store,
	// oldest first (ours; [checkpoints.schedule]). Absent when it has none.
	Checkpoints []ScheduledCheckpoint `json:"checkpoints,omitempty" nib:"optional"`
}

// ScheduledCheckpoint is one checkpoint the host took of a volume on its
// schedule: its object in the checkpoint store, the object's sha-256 (what
// a volume's initialContents names to restore from it) and when it was
// taken.
type ScheduledCheckpoint struct {
	ObjectKey desired.ObjectKey    `json:"objectKey"`
	Digest    desired.Sha256Digest `json:"digest"`
	TakenAt   time.Time            `json:"takenAt"`
}

// Usage is a volume's measured fill.
type Usage struct {
	TotalBytes uint64    `json:"totalBytes"`
	UsedBytes  uint64    `json:"usedBytes"`
	MeasuredAt time.Time `json:"measuredAt"`
}

// Instance is one app's report.
type Instance struct {
	AppId         desired.AppId          `json:"appId"`
	DeploymentId  desired.DeploymentId   `json:"deploymentId"`
	State         InstanceState          `json:"state"`
	RestartCount  uint32                 `json:"restartCount"`
	HostPort      uint16                 `json:"hostPort,omitempty" nib:"optional"`
	GuestIpv4     string                 `json:"guestIpv4,omitempty" nib:"optional"`
	LayerDigests  []desired.Sha256Digest `json:"layerDigests,omitempty" nib:"optional"`
	StartedAt     *time.Time             `json:"startedAt,omitempty" nib:"optional"`
	LastHealthyAt *time.Time             `json:"lastHealthyAt,omitempty" nib:"optional"`
	ConvergedAt   *time.Time             `json:"convergedAt,omitempty" nib:"optional"`
	// LastExitCode is 128+signal for a process ended by a signal.
	LastExitCode *int     `json:"lastExitCode,omitempty" nib:"optional"`
	Compute      *Compute `json:"compute,omitempty" nib:"optional"`
	// Memory is, while the guest is up, what it was given and what it
	// holds of the host (ours).
	Memory *Memory `json:"memory,omitempty" nib:"optional"`
	Meters *Meters `json:"meters,omitempty" nib:"optional"`
	// Message is a sentence a person can act on.
	Message string `json:"message,omitempty" nib:"optional,rule=message"`
}

// Memory is memory given to a guest and held of the host (ours). Held is each VMM
// process's measured share of the host (guest RAM the host did not take
// back, the VMM itself), or the given memory of a guest not measured yet.
type Memory struct {
	GivenMib uint64 `json:"givenMib"`
	HeldMib  uint64 `json:"heldMib"`
	// TcgCacheMib is the part of HeldMib that is the emulator's
	// translation cache (QEMU under TCG, bounded to 32 MiB; none on KVM).
	TcgCacheMib uint64 `json:"tcgCacheMib,omitempty" nib:"optional"`
}

// HostMemory is the host's memory admission (ours): what its guests up
// and its starts in flight were given and hold (a start its whole size),
// against the capacity and the overcommit ratio.
type HostMemory struct {
	GivenMib    uint64  `json:"givenMib"`
	HeldMib     uint64  `json:"heldMib"`
	CapacityMib uint64  `json:"capacityMib"`
	Overcommit  float64 `json:"overcommit"`
}

// Compute is an instance's measured use of its microVM.
type Compute struct {
	MemoryTotalBytes uint64    `json:"memoryTotalBytes"`
	MemoryUsedBytes  uint64    `json:"memoryUsedBytes"`
	CpuShare         float64   `json:"cpuShare"`
	MeasuredAt       time.Time `json:"measuredAt"`
}

// Meters are an instance's counters; they only ever grow.
type Meters struct {
	RunningMs uint64 `json:"runningMs"`
	IdleMs    uint64 `json:"idleMs"`
	CpuMs     uint64 `json:"cpuMs"`
	RxBytes   uint64 `json:"rxBytes"`
	TxBytes   uint64 `json:"txBytes"`
}

// Checkpoint is one checkpoint's report.
type Checkpoint struct {
	CheckpointId desired.CheckpointId `json:"checkpointId"`
	VolumeId     desired.VolumeId     `json:"volumeId"`
	State        CheckpointState      `json:"state"`
	Reference    string               `json:"reference,omitempty" nib:"optional"`
	ReadyAt      *time.Time           `json:"readyAt,omitempty" nib:"optional"`
	Message      string               `json:"message,omitempty" nib:"optional,rule=message"`
	// ObjectKey and Digest are the checkpoint's object in the checkpoint
	// store and its sha-256 (ours): what a volume's initialContents names
	// to be restored from it, on this host or another.
	ObjectKey desired.ObjectKey    `json:"objectKey,omitempty" nib:"optional"`
	Digest    desired.Sha256Digest `json:"digest,omitempty" nib:"optional"`
}

// Export is one export's report.
type Export struct {
	ExportId  desired.ExportId `json:"exportId"`
	State     ExportState      `json:"state"`
	SizeBytes uint64           `json:"sizeBytes,omitempty" nib:"optional"`
	ReadyAt   *time.Time       `json:"readyAt,omitempty" nib:"optional"`
	Message   string           `json:"message,omitempty" nib:"optional,rule=message"`
}

// Truncate shortens a message to MaxMessageLen characters, ending it with
// an ellipsis when it had to cut.
func Truncate(msg string) string {
	r := []rune(msg)
	if len(r) <= MaxMessageLen {
		return msg
	}
	return string(r[:MaxMessageLen-1]) + "…"
}

// WarningsOf is the report's warnings for a document's (desired.DecodeFields):
// each truncated, at most MaxWarnings, the last of them saying how many
// more there are. Nil when there are none, so the field is omitted.
func WarningsOf(ws []desired.Reason) []string {
	if len(ws) == 0 {
		return nil
	}
	n := min(len(ws), MaxWarnings)
	if len(ws) > MaxWarnings {
		n = MaxWarnings - 1
	}
	out := make([]string, 0, n+1)
	for _, w := range ws[:n] {
		out = append(out, Truncate(w.String()))
	}
	if n < len(ws) {
		out = append(out, fmt.Sprintf("and %d more unknown properties: nibrunnerd check names them all", len(ws)-n))
	}
	return out
}
