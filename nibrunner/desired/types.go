// Package desired is the contract of desired.json: the Go types of every
// type the document names, the decoder that refuses a document breaking any
// rule (naming the JSON path and the rule), and the JSON Schema generated
// from these same types so the published schema cannot drift from the code.
//
// Type names follow the schema's own names (AppId, not AppID) so that a
// reader can go from a schema $defs entry to its Go type by name.
//
// Struct tags: `json` gives the property name; `nib` carries what JSON
// alone cannot say: "optional" (may be absent or null; everything else is
// required), "kind" (the discriminator of a tagged union) and
// "variant=a|b" (the field belongs only to those kinds; in other kinds it
// is ignored), "minItems=", "maxItems=" and "rule=" (a field-level rule
// from rules.go). Patterns and ranges live on the named scalar types, in
// rules.go.
package desired

import "strings"

// Identifiers. Each matches ^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$.
type (
	HostId       string
	AppId        string
	VolumeId     string
	DeploymentId string
	CheckpointId string
	ExportId     string
)

// Scalars with a pattern or a range (see rules.go for each one's rule).
type (
	// Sha256Digest is a lowercase hex sha-256.
	Sha256Digest string
	// ObjectKey names an object in a store: 1 to 1024 characters.
	ObjectKey string
	// GuestPath is "/" or an absolute path with no empty, "." or ".."
	// segment, and no / \ " ' or control character inside a segment.
	GuestPath string
	// ExecutablePath is a GuestPath naming a file other than / and /sbin/init.
	ExecutablePath string
	// HttpPort is 1 to 65535.
	HttpPort int
	// GuestPort is 1 to 65535.
	GuestPort int
	// PortName is ^[a-z][a-z0-9-]{0,15}$.
	PortName string
	// Hostname is a lowercase DNS name of at least two labels, at most 253 characters.
	Hostname string
	// IdleTimeoutMs is 60000 to 86400000.
	IdleTimeoutMs int64
	// MaxLifetimeMs is 60000 to 604800000.
	MaxLifetimeMs int64
	// TenantValue is at most 32768 characters; ${NAME}/$NAME are filled
	// for NIBRUN_HOSTNAME and NIBRUN_HTTP_PORT, any other $NIBRUN_
	// reference refuses the document.
	TenantValue string
	// TenantArguments: at most 64 items of at most 4096 characters.
	TenantArguments []string
	// TenantEnvironment maps keys matching ^[A-Za-z_][A-Za-z0-9_]*$ to values.
	TenantEnvironment map[string]TenantValue
)

// DesiredPresence says whether a volume, checkpoint or export should exist.
type DesiredPresence string

// The presences.
const (
	Present DesiredPresence = "present"
	Absent  DesiredPresence = "absent"
)

// DesiredInstanceState is the whole of an instance's activation policy.
type DesiredInstanceState string

// The instance states a document may ask for.
const (
	// StateRunning keeps the microVM up.
	StateRunning DesiredInstanceState = "running"
	// StateOnRequest boots it for the first deploy, then sleeps per its
	// sleep policy and wakes it on the next request.
	StateOnRequest DesiredInstanceState = "on-request"
	// StateStopped takes it down; its hostnames answer 503 and the volume stays.
	StateStopped DesiredInstanceState = "stopped"
)

// LayerKind tells what a layer's object is.
type LayerKind string

// The layer kinds.
const (
	LayerFilesystem LayerKind = "filesystem"
	LayerExecutable LayerKind = "executable"
	// LayerImage is an OCI (or Docker) image pinned by digest, pulled from
	// its registry and flattened into one read-only filesystem image
	// (nibrunner/image). Later than the seed.
	LayerImage LayerKind = "image"
)

// ImageReference is an OCI image reference pinned by digest:
// registry/repository@sha256:<64 lowercase hex digits>.
type ImageReference string

// HealthCheckKind tells how an instance's wellness is read.
type HealthCheckKind string

// The health check kinds.
const (
	HealthHTTP          HealthCheckKind = "http"
	HealthTCP           HealthCheckKind = "tcp"
	HealthBootCompleted HealthCheckKind = "boot-completed"
)

// SleepPolicyKind tells what puts a running microVM back to sleep.
type SleepPolicyKind string

// The sleep policy kinds.
const (
	SleepNever       SleepPolicyKind = "never"
	SleepTrafficIdle SleepPolicyKind = "traffic-idle"
	SleepMaxLifetime SleepPolicyKind = "max-lifetime"
)

// AppHostnameKind says who owns a hostname.
type AppHostnameKind string

// The hostname kinds.
const (
	HostnamePlatform AppHostnameKind = "platform"
	HostnameCustom   AppHostnameKind = "custom"
)

// DefaultIdleTimeoutMs is the traffic-idle timeout of an on-request instance
// that names neither activation nor idleTimeoutMs.
const DefaultIdleTimeoutMs IdleTimeoutMs = 300000

// HostDesiredState is what one host should be running. The daemon watches
// this document at the path its paths.desired_state_file names and
// converges on every change to it.
type HostDesiredState struct {
	Schema string `json:"$schema,omitempty" nib:"optional"`
	HostId HostId `json:"hostId"`
	// Volumes is not authoritative: a volume is deleted only by an explicit
	// desiredState "absent", never because its entry vanished.
	Volumes []DesiredVolume `json:"volumes"`
	// Instances is authoritative: an app not listed is stopped, then forgotten.
	Instances   []DesiredInstance   `json:"instances"`
	Checkpoints []DesiredCheckpoint `json:"checkpoints"`
	Exports     []DesiredExport     `json:"exports"`
}

// DesiredVolume is one app's persistent, writable filesystem.
type DesiredVolume struct {
	VolumeId VolumeId `json:"volumeId"`
	AppId    AppId    `json:"appId"`
	// SizeBytes rounds up to 512 bytes; growing is allowed, shrinking fails the volume.
	SizeBytes       uint64           `json:"sizeBytes"`
	DesiredState    DesiredPresence  `json:"desiredState"`
	InitialContents *InitialContents `json:"initialContents,omitempty" nib:"optional"`
}

// InitialContents is an archive in the artifact store (tar, tar.gz or zip)
// unpacked once under DestinationPath as the volume is formatted; later
// edits do nothing to a formatted volume.
type InitialContents struct {
	Digest          Sha256Digest `json:"digest"`
	ObjectKey       ObjectKey    `json:"objectKey"`
	DestinationPath GuestPath    `json:"destinationPath"`
}

// DesiredInstance is one app's microVM.
type DesiredInstance struct {
	AppId AppId `json:"appId"`
	// DeploymentId: a running instance is replaced when, and only when, it changes.
	DeploymentId DeploymentId `json:"deploymentId"`
	// VolumeId names one of this document's volumes, one whose appId is
	// this instance's.
	VolumeId     VolumeId             `json:"volumeId"`
	DesiredState DesiredInstanceState `json:"desiredState"`
	// Layers stack first at the bottom; 1 to 8 of them.
	Layers    []DesiredLayer `json:"layers" nib:"minItems=1,maxItems=8"`
	Config    AppConfig      `json:"config"`
	Hostnames []AppHostname  `json:"hostnames"`
	// IdleTimeoutMs is the older spelling of activation.sleepWhen
	// traffic-idle, refused beside Activation.
	IdleTimeoutMs *IdleTimeoutMs    `json:"idleTimeoutMs,omitempty" nib:"optional"`
	Activation    *ActivationPolicy `json:"activation,omitempty" nib:"optional"`
}

// EffectiveSleepPolicy is the policy the host applies: Activation if given;
// else an on-request instance sleeps after IdleTimeoutMs (or 300000 ms)
// without traffic; anything else never sleeps.
func (in DesiredInstance) EffectiveSleepPolicy() SleepPolicy {
	if in.Activation != nil {
		return in.Activation.SleepWhen
	}
	if in.DesiredState == StateOnRequest {
		t := DefaultIdleTimeoutMs
		if in.IdleTimeoutMs != nil {
			t = *in.IdleTimeoutMs
		}
		return SleepPolicy{Kind: SleepTrafficIdle, TimeoutMs: t}
	}
	return SleepPolicy{Kind: SleepNever}
}

// DesiredLayer is one read-only layer of the root filesystem, told apart by
// Kind: a filesystem image attached as uploaded, one executable the host
// packs into an image at DestinationPath, or an OCI image the host pulls
// by Reference.
type DesiredLayer struct {
	Kind      LayerKind    `json:"kind" nib:"kind"`
	Digest    Sha256Digest `json:"digest" nib:"variant=filesystem|executable"`
	ObjectKey ObjectKey    `json:"objectKey" nib:"variant=filesystem|executable"`
	// Reference is an image layer's image, pinned by digest.
	Reference ImageReference `json:"reference" nib:"variant=image"`
	// DestinationPath is where an executable layer's program lands (mode 0755).
	DestinationPath ExecutablePath `json:"destinationPath" nib:"variant=executable"`
	// SizeBytes, when present, is verified against the fetched object.
	SizeBytes *uint64 `json:"sizeBytes,omitempty" nib:"optional"`
}

// ContentDigest is the lowercase hex sha-256 that pins the layer's content:
// its object's, or the manifest (or index) digest an image layer's
// reference names.
func (l DesiredLayer) ContentDigest() string {
	if l.Kind == LayerImage {
		_, d, _ := strings.Cut(string(l.Reference), "@sha256:")
		return d
	}
	return string(l.Digest)
}

// AppConfig is how the app runs inside its microVM.
type AppConfig struct {
	// HttpPort is the guest port the HTTP proxy sends hostnames to, and the
	// one the health check probes.
	HttpPort      HttpPort          `json:"httpPort"`
	Command       Command           `json:"command"`
	Resources     InstanceResources `json:"resources"`
	HealthCheck   HealthCheck       `json:"healthCheck"`
	RestartPolicy RestartPolicy     `json:"restartPolicy"`
	// Ports are what the app answers on besides HttpPort.
	Ports []InstancePort `json:"ports,omitempty" nib:"optional"`
}

// Command is what the guest runs once its root is stacked, as uid 65534.
type Command struct {
	Program          ExecutablePath    `json:"program"`
	Args             TenantArguments   `json:"args"`
	WorkingDirectory GuestPath         `json:"workingDirectory"`
	Environment      TenantEnvironment `json:"environment"`
}

// InstanceResources is what one microVM is given.
type InstanceResources struct {
	VcpuCount uint32 `json:"vcpuCount"`
	MemoryMib uint32 `json:"memoryMib"`
}

// HealthCheck tells the host an instance is well, told apart by Kind. The
// timings are required for http and tcp; boot-completed has none (they
// stay zero), since it is asked only until httpPort first accepts.
type HealthCheck struct {
	Kind HealthCheckKind `json:"kind" nib:"kind"`
	// Path is requested on httpPort by an http check; 2xx is healthy. It
	// starts with "/".
	Path               string `json:"path" nib:"variant=http,rule=httpPath"`
	IntervalMs         uint64 `json:"intervalMs" nib:"variant=http|tcp"`
	TimeoutMs          uint64 `json:"timeoutMs" nib:"variant=http|tcp"`
	GracePeriodMs      uint64 `json:"gracePeriodMs" nib:"variant=http|tcp"`
	HealthyThreshold   uint32 `json:"healthyThreshold" nib:"variant=http|tcp"`
	UnhealthyThreshold uint32 `json:"unhealthyThreshold" nib:"variant=http|tcp"`
}

// RestartPolicy bounds restarts: delay(n) = min(initial·factor^(n−1), max),
// the count resets after ResetAfterMs without a start, and past MaxRestarts
// the instance is failed until a new deploymentId.
type RestartPolicy struct {
	MaxRestarts      uint32  `json:"maxRestarts"`
	InitialBackoffMs uint64  `json:"initialBackoffMs"`
	MaxBackoffMs     uint64  `json:"maxBackoffMs"`
	BackoffFactor    float64 `json:"backoffFactor"`
	ResetAfterMs     uint64  `json:"resetAfterMs"`
}

// InstancePort is a port a guest answers on beside its HTTP one, carried
// to it unread, tcp and udp alike.
type InstancePort struct {
	Name      PortName  `json:"name"`
	GuestPort GuestPort `json:"guestPort"`
}

// AppHostname is a name the HTTP proxy routes to the app's httpPort.
type AppHostname struct {
	Hostname Hostname        `json:"hostname"`
	Kind     AppHostnameKind `json:"kind"`
}

// ActivationPolicy says what puts the instance to sleep.
type ActivationPolicy struct {
	SleepWhen SleepPolicy `json:"sleepWhen"`
}

// SleepPolicy is what puts a running microVM back to sleep, told apart by
// Kind. Only an on-request instance may carry one other than never.
type SleepPolicy struct {
	Kind SleepPolicyKind `json:"kind" nib:"kind"`
	// TimeoutMs: traffic-idle sleeps after this long with nothing sent to the app.
	TimeoutMs IdleTimeoutMs `json:"timeoutMs" nib:"variant=traffic-idle"`
	// TtlMs: max-lifetime sleeps after this long up, however busy.
	TtlMs MaxLifetimeMs `json:"ttlMs" nib:"variant=max-lifetime"`
}

// DesiredCheckpoint is a point-in-time copy of a volume.
type DesiredCheckpoint struct {
	CheckpointId CheckpointId    `json:"checkpointId"`
	VolumeId     VolumeId        `json:"volumeId"`
	DesiredState DesiredPresence `json:"desiredState"`
}

// DesiredExport is a gzipped tar of a volume (under data/) and the app's
// environment (as .env) written to ObjectKey in the exports store.
type DesiredExport struct {
	ExportId     ExportId        `json:"exportId"`
	AppId        AppId           `json:"appId"`
	VolumeId     VolumeId        `json:"volumeId"`
	ObjectKey    ObjectKey       `json:"objectKey"`
	DesiredState DesiredPresence `json:"desiredState"`
	// Environment: an empty non-nil map means no variables; nil means unknown.
	Environment TenantEnvironment `json:"environment" nib:"optional"`
}
