// Package vmm declares what the host daemon needs from a virtual machine
// monitor, and nothing more. The daemon decides what should run; a VMM only
// knows how to start, stop, snapshot and look at one guest per app.
//
// Two implementations exist: nibrunner/vmm/qemu drives QEMU's microvm machine
// over QMP, and nibrunner/vmm/fake runs each "guest" as a local HTTP server
// process so the converge loop can be tested end to end without QEMU.
//
// Guests must outlive the daemon: an implementation starts every guest in its
// own session and records it in a pidfile under its runtime folder, so that a
// restarted daemon finds it again with List (an adopted guest keeps its PID
// and its start time; nothing is restarted). A pidfile is trusted only when
// its boot id is this boot's and its PID is alive and still the guest it
// names.
package vmm

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"alpnib.dev/nibrunner/execwire"
)

// ErrNotFound is returned (wrapped) when an operation names an app the VMM
// has no guest, pidfile or snapshot for.
var ErrNotFound = errors.New("no such guest")

// LayerKind tells an image that is attached as it is from one the VMM packs
// around a single program.
type LayerKind string

const (
	// LayerFilesystem is a squashfs or ext4 image attached read-only as is.
	LayerFilesystem LayerKind = "filesystem"
	// LayerExecutable is one program that is packed into an image at
	// DestinationPath with mode 0755. The daemon's layer cache packs it
	// before a start, so a VMM is handed filesystem layers only (QEMU
	// refuses an executable one).
	LayerExecutable LayerKind = "executable"
)

// Layer is one read-only layer of a guest's root, already fetched and
// verified into the host's cache. Layers stack in Spec order, first at the
// bottom.
type Layer struct {
	Kind   LayerKind
	Digest string // sha256 of the object as uploaded
	// Path is the local file: the image (filesystem) or the program
	// (executable).
	Path string
	// DestinationPath is where an executable layer's program appears in the
	// guest; empty for a filesystem layer.
	DestinationPath string
}

// Command is what the guest's init runs as uid/gid 65534 once the root is
// stacked. Environment is the tenant's, already validated; the guest adds
// NIBRUN_HTTP_PORT, PORT, NIBRUN_DATA_DIR and NIBRUN_HOSTNAME itself.
type Command struct {
	Program          string
	Args             []string
	WorkingDirectory string
	Environment      map[string]string
}

// RestartPolicy is the document's restart policy, which the guest's init
// applies to the tenant process (the daemon applies it to VM starts).
type RestartPolicy struct {
	MaxRestarts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	BackoffFactor  float64
	ResetAfter     time.Duration
}

// Port is a raw port the guest answers on beside its HTTP one.
type Port struct {
	Name      string
	GuestPort int
	HostPort  int
}

// Network is the app's slot on the host network: a tap device and a /30.
type Network struct {
	Tap       string     // "nbrN"
	HostIPv4  netip.Addr // 10.201.x.(4N+1)
	GuestIPv4 netip.Addr // 10.201.x.(4N+2)
	PrefixLen int        // 30
	// HostPort is the first of the slot's eight host ports (the HTTP one);
	// raw ports follow it.
	HostPort int
	// DNS are the name servers the guest's resolv.conf names ([network]
	// dns_servers), in order; none leaves the guest without.
	DNS []netip.Addr
}

// Spec is everything needed to boot one app's guest. It is complete: a VMM
// keeps no other configuration of its own per app.
type Spec struct {
	AppID        string
	DeploymentID string
	Slot         int
	MemoryMiB    int
	VCPUs        int
	Layers       []Layer
	// VolumePath is the app's writable volume (a file or block device),
	// stacked over the layers.
	VolumePath string
	Command    Command
	HTTPPort   int // the port the tenant listens on inside the guest
	Ports      []Port
	Restart    RestartPolicy
	Network    Network
	// Hostname is the first platform hostname, or empty.
	Hostname string
}

// State is what a VMM can see of a guest.
type State string

const (
	// Running: the guest's process is alive and executing.
	Running State = "running"
	// Exited: the guest's process is gone; ExitCode says how if known.
	Exited State = "exited"
)

// Status is one guest as the VMM sees it.
type Status struct {
	AppID        string
	DeploymentID string
	Slot         int
	State        State
	PID          int
	BootID       string // the host boot id the guest was started under
	StartedAt    time.Time
	// ExitCode is set for an Exited guest whose exit is known: the tenant
	// program's code, 128+signal for a signal.
	ExitCode *int
	// Message is, for an Exited guest, its own word on why it stopped when
	// it gave one (nibrun-init's report: a setup that failed, a restart
	// policy spent), or "".
	Message string
	// Endpoint is host:port at which the daemon reaches the guest's
	// HTTP port for health checks (the guest IP for a real VM, loopback for
	// the fake).
	Endpoint string
	// Restored is true when Wake brought the guest back from its snapshot
	// rather than booting it cold.
	Restored bool
	// WokenCold is, for a Wake that booted cold, why its snapshot was not
	// restored (a sentence: its stamp did not fit this host, or the
	// restore failed), or "" when the VMM does not say.
	WokenCold string
}

// Measurement is a guest's resource use at one moment. CPU and byte
// counters are cumulative since the guest started.
type Measurement struct {
	MemoryTotalBytes uint64
	MemoryUsedBytes  uint64
	CPUTime          time.Duration
	RxBytes          uint64
	TxBytes          uint64
	// HostMemoryBytes is what the guest's VMM process holds of the host
	// (its proportional set size: guest RAM it touched and the host did not
	// take back, its own memory, its share of shared pages); 0 when the
	// VMM cannot tell.
	HostMemoryBytes uint64
	// TCGCacheBytes is the part of HostMemoryBytes that is the emulator's
	// translation cache (QEMU under TCG; 0 under KVM).
	TCGCacheBytes uint64
	MeasuredAt    time.Time
}

// VMM runs guests. Every method is safe for concurrent use on different
// apps; the daemon never calls two methods on the same app at once.
type VMM interface {
	// Start boots spec.AppID's guest and returns once its process runs (not
	// once the tenant answers: that is the health check's business). An app
	// that already has a live guest is an error.
	Start(ctx context.Context, spec Spec) (Status, error)
	// Stop takes the app's guest down: gracefully first, then by force once
	// ctx's deadline nears. It removes the pidfile; stopping an app with no
	// guest is not an error. Any snapshot is kept (see Discard).
	Stop(ctx context.Context, appID string) error
	// List returns every guest the VMM knows of: the ones it started and the
	// ones it adopted from pidfiles, live or exited (an exited guest stays
	// listed until Stop or Start clears it, so its exit code can be read).
	List(ctx context.Context) ([]Status, error)
	// Sleep saves the guest's state and memory under the snapshot folder,
	// stamped with what a restore needs to match (the deployment and guest
	// image, and what the VMM's own snapshots need), then ends its process.
	Sleep(ctx context.Context, appID string) error
	// Wake restores the snapshot Sleep saved when its stamp matches spec,
	// and otherwise boots spec cold (Status.Restored tells which).
	Wake(ctx context.Context, spec Spec) (Status, error)
	// Discard deletes the app's snapshot, if any.
	Discard(ctx context.Context, appID string) error
	// Measure reads the guest's resource use.
	Measure(ctx context.Context, appID string) (Measurement, error)
	// Version names the VMM for reported.json's versions.vmm.
	Version() string
}

// Freezer is what a VMM may also do: ask the guest's init to freeze
// (FIFREEZE) or thaw (FITHAW) the filesystem on the app's volume, so that
// the volume file can be copied consistently while the guest runs. A VMM
// without it cannot checkpoint a running guest's volume.
//
// Only one freeze of a volume holds at a time, and a thaw ends whichever
// is in place; so a FreezeVolume that certainly froze nothing (the guest
// refused it, or another freeze of this VMM's holds the volume) returns an
// error wrapping ErrFreezeRefused, and its caller must not thaw. Any other
// error may have frozen the volume, and is to be followed by a thaw.
type Freezer interface {
	FreezeVolume(ctx context.Context, app string) error
	ThawVolume(ctx context.Context, app string) error
}

// ErrFreezeRefused is wrapped by a FreezeVolume that froze nothing (see
// Freezer).
var ErrFreezeRefused = errors.New("the volume was not frozen")

// ConsoleLogger is what a VMM with a serial console may also do: name the
// file the app's guest console is written to.
type ConsoleLogger interface {
	ConsolePath(appID string) string
}

// Execer is what a VMM may also do: run a program inside an app's live
// guest, as package execwire describes. The program is looked up in the
// app's root; nothing is injected.
type Execer interface {
	Exec(ctx context.Context, app string, spec execwire.Spec) (ExecStream, error)
}

// ExecStream is one exec session's frames, its session id left out. The
// guest sends stdout and stderr only as far as Window frames sent here
// grant (execwire.DefaultWindow each to begin with), so the stream holds
// at most that much however slowly Recv is called.
type ExecStream interface {
	// Send sends one frame (data, window, resize, signal, close-stdin)
	// to the guest's program.
	Send(t execwire.Type, payload []byte) error
	// Recv returns the guest's next frame; TypeExit is the last. The
	// payload is the caller's.
	Recv(ctx context.Context) (execwire.Type, []byte, error)
	// Close abandons the session: the guest kills the program.
	Close() error
}

// TenantLogger is what a VMM may also do: name the file the app's own
// stdout and stderr are written to.
type TenantLogger interface {
	TenantLogPath(appID string) string
}

// Wrapper is a VMM that adds to another (metrics.Instrument counts its
// starts and sleeps). Unwrap returns the VMM it wraps.
type Wrapper interface {
	VMM
	Unwrap() VMM
}

// As finds what v can also do (Freezer, ConsoleLogger, TenantLogger): v
// itself when it is a T, else the first VMM down its chain of wrappers
// that is one, as errors.As looks through wrapped errors. A capability
// found under a wrapper runs without the wrapper; wrappers add only to the
// methods of VMM itself. Look capabilities up with As, never with a type
// assertion on a VMM that may be wrapped.
func As[T any](v VMM) (T, bool) {
	for v != nil {
		if t, ok := v.(T); ok {
			return t, true
		}
		w, ok := v.(Wrapper)
		if !ok {
			break
		}
		v = w.Unwrap()
	}
	var zero T
	return zero, false
}
