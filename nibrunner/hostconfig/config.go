// Package hostconfig is the host's own configuration, config.toml: read
// once at start and validated whole, so a typo stops the daemon with the
// key's name instead of running it half-configured. A missing key is
// refused by name, an unknown key is refused, and only whole optional
// sections ([proxy.http], [proxy.http.tls], [proxy.raw], [metrics]) may be
// absent. S3 credentials come from the environment, never from this file.
//
// The package also holds what `nibrunnerd install` lays down: the
// embedded default configuration, the folder layout and the systemd unit.
package hostconfig

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/slot"
)

// DefaultPath is where the configuration lives unless NIBRUNNER_CONFIG
// names another file.
const DefaultPath = "/etc/nibrunner/config.toml"

// EnvVar names the environment variable that overrides DefaultPath.
const EnvVar = "NIBRUNNER_CONFIG"

// MaxApps is the most apps one host can hold: one per slot.
const MaxApps = slot.Max

// Config is config.toml. Fields tagged toml:"-" are parsed from the raw
// ones by Load.
type Config struct {
	// MaxApps is the most apps this host runs, 1 to 5567: each app owns a
	// slot of 8 host ports from 21000 (its HTTP port and 7 raw ones).
	MaxApps int `toml:"max_apps"`
	// MaxConcurrentVMStarts bounds the guest starts, wakes, stops and
	// sleeps in flight at once (ours; optional, 1 to 256; 0 is refused).
	// Absent: one per CPU, since a software-emulated boot keeps a core busy.
	MaxConcurrentVMStarts int `toml:"max_concurrent_vm_starts,omitempty"`
	// LayerCacheBytes is the layer cache's budget (ours; optional). A
	// layer no document references is removed an hour after the last
	// one did, or at once while the cache is over this budget.
	LayerCacheBytes int       `toml:"layer_cache_bytes,omitempty"`
	Paths           Paths     `toml:"paths"`
	Artifacts       Artifacts `toml:"artifacts"`
	Volumes         Volumes   `toml:"volumes"`
	Exports         Exports   `toml:"exports"`
	// Checkpoints holds only settings with defaults, so it may be absent.
	Checkpoints Checkpoints `toml:"checkpoints"`
	// Admission holds only settings with defaults, so it may be absent.
	Admission Admission `toml:"admission"`
	// Exec holds only settings with defaults, so it may be absent.
	Exec    Exec    `toml:"exec"`
	Network Network `toml:"network"`
	// Jail holds only settings with defaults, so it may be absent.
	Jail Jail `toml:"jail"`
	// Proxy holds only optional sections, so it may be absent too.
	Proxy   Proxy    `toml:"proxy"`
	Metrics *Metrics `toml:"metrics"`
	// Images lets the host pull image layers (an OCI image by digest);
	// absent, a document naming one is refused with a sentence saying so.
	Images *Images `toml:"images"`
}

// Images are the host's pull settings for image layers. The pulled images
// are cached under state_dir/layers/oci and collected with the layer
// cache.
type Images struct {
	// AuthFile is a Docker config.json whose "auths" give each registry's
	// credentials; root's, mode 0600 or stricter. Empty: anonymous pulls.
	AuthFile string `toml:"auth_file,omitempty"`
	// CAFile is a PEM bundle trusted beside the system's roots (a private
	// registry's CA).
	CAFile string `toml:"ca_file,omitempty"`
	// PlainHTTPRegistries are registries (host:port) on a loopback address
	// reached without TLS; no other registry ever is.
	PlainHTTPRegistries []string `toml:"plain_http_registries,omitempty"`
	// MaxUnpackedBytes bounds an image's uncompressed layers, summed
	// (default 8 GiB), so a decompression bomb stops there.
	MaxUnpackedBytes int64 `toml:"max_unpacked_bytes,omitempty"`
}

// Paths are where the daemon keeps things on this host.
type Paths struct {
	// StateDir holds the SQLite database and reported.json.
	StateDir string `toml:"state_dir"`
	// RuntimeDir holds pidfiles and sockets of running guests.
	RuntimeDir string `toml:"runtime_dir"`
	// SnapshotDir holds the memory of sleeping guests.
	SnapshotDir string `toml:"snapshot_dir"`
	// GuestImageDir holds the guest kernel and initramfs.
	GuestImageDir string `toml:"guest_image_dir"`
	// DesiredStateFile is the desired.json the daemon watches, or (ours)
	// an s3://bucket/key object it polls with conditional GETs.
	DesiredStateFile string `toml:"desired_state_file"`
	// DesiredStatePollMs is how often an s3:// desired_state_file is
	// polled (ours; default 10000, 100 to 3600000).
	DesiredStatePollMs int `toml:"desired_state_poll_ms,omitempty"`
	// ReportedStateURL is an s3://bucket/key that reported.json is also
	// written to (ours; optional).
	ReportedStateURL string `toml:"reported_state_url,omitempty"`
}

// DefaultDesiredStatePollMs is how often an s3:// desired_state_file is
// polled unless paths.desired_state_poll_ms says otherwise.
const DefaultDesiredStatePollMs = 10000

// IsS3 says whether a path setting names an S3 object rather than a file.
func IsS3(url string) bool { return strings.HasPrefix(url, "s3://") }

// Artifacts is where layers and initial contents are fetched from.
type Artifacts struct {
	// StoreURL is where layers and volumes' initial contents are fetched
	// from by their objectKey: s3://bucket/prefix or an absolute folder.
	StoreURL string `toml:"store_url"`
	Store    Store  `toml:"-"`
}

// Volumes says how app volumes are stored.
type Volumes struct {
	// Backend is "local-file": sparse ext4 files on the host's disk.
	Backend string `toml:"backend"`
	// StoragePrefix is the folder the volume files live in.
	StoragePrefix string `toml:"storage_prefix"`
}

// Exports is where export bundles are written.
type Exports struct {
	// StoreURL is where export bundles are uploaded, at their objectKey:
	// s3://bucket/prefix or an absolute folder.
	StoreURL string `toml:"store_url"`
	// StagingDir holds the checkpoint copy an export is written from,
	// and a note per export in flight, so a restarted daemon aborts an
	// upload the one before left.
	StagingDir string `toml:"staging_dir"`
	Store      Store  `toml:"-"`
}

// Checkpoints says where checkpoints go and how checkpoints and exports
// run. (ours) Every key is optional.
type Checkpoints struct {
	// StoreURL is where checkpoints are uploaded (s3://bucket/prefix or an
	// absolute folder); default artifacts.store_url. Objects are
	// <prefix>/checkpoints/<hostname>/<id>.nibsparse.
	StoreURL string `toml:"store_url,omitempty"`
	// FreezeTimeoutMs bounds how long a guest's filesystem stays frozen
	// for one copy (default 10000); the guest thaws by itself after it.
	FreezeTimeoutMs int `toml:"freeze_timeout_ms,omitempty"`
	// MaxConcurrent bounds the checkpoints and exports running at once
	// (default 2).
	MaxConcurrent int `toml:"max_concurrent,omitempty"`
	// Schedule may be absent: every volume is then checkpointed daily,
	// the last 7 kept.
	Schedule Schedule `toml:"schedule"`
	Store    Store    `toml:"-"`
}

// Schedule is how the host checkpoints every volume it holds on its own
// (ours), beside the checkpoints a document asks for: into
// checkpoints.store_url under checkpoints/<hostname>/scheduled/, each
// listed under its volume in reported.json (object key, digest, when it
// was taken), the oldest beyond keep deleted from the store once a newer
// one is uploaded whole. A checkpoint that fails is retried with backoff
// and deletes nothing. Every key is optional.
type Schedule struct {
	// IntervalMs is the time between two checkpoints of a volume (default
	// 86400000, a day; 60000 to 2678400000). A volume's first is taken an
	// interval after the host first sees it.
	IntervalMs int `toml:"interval_ms,omitempty"`
	// Keep is how many of a volume's scheduled checkpoints stay in the
	// store (default 7; 1 to 1000).
	Keep int `toml:"keep,omitempty"`
	// Disabled, true, takes no scheduled checkpoint of a volume unless its
	// own section asks for them; those in the store stay.
	Disabled bool `toml:"disabled,omitempty"`
	// Volumes are per-volume overrides, one section each, named by the
	// volume's volumeId.
	Volumes map[string]VolumeSchedule `toml:"volumes,omitempty"`
}

// VolumeSchedule is one volume's own schedule: its keys left out take
// [checkpoints.schedule]'s, and the section alone schedules the volume
// even when the host's schedule is disabled. Every key is optional.
type VolumeSchedule struct {
	// IntervalMs is the time between two checkpoints of the volume
	// (60000 to 2678400000).
	IntervalMs int `toml:"interval_ms,omitempty"`
	// Keep is how many of the volume's scheduled checkpoints stay (1 to
	// 1000).
	Keep int `toml:"keep,omitempty"`
	// Disabled, true, takes no scheduled checkpoint of the volume; those
	// in the store stay.
	Disabled bool `toml:"disabled,omitempty"`
}

// The [checkpoints.schedule] defaults and bounds.
const (
	DefaultScheduleIntervalMs = 86400000
	DefaultScheduleKeep       = 7
	minScheduleIntervalMs     = 60000
	maxScheduleIntervalMs     = 2678400000
	maxScheduleKeep           = 1000
)

// Admission is how guests are admitted into the host's memory.
type Admission struct {
	// MemoryOvercommit is how many times the guests' memory capacity the
	// memory given to guests may add up to (ours; default 1.0, 1 to 16).
	// Above 1 a start must also fit in what the guests hold of the host
	// (each QEMU's measured share), and the longest-idle on-request apps
	// are put to sleep to make room before a start is refused.
	MemoryOvercommit float64 `toml:"memory_overcommit,omitempty"`
}

// Exec bounds the exec and cp sessions of nibrunnerd exec and cp (ours).
// Every key is optional.
type Exec struct {
	// MaxSessionsPerApp caps the exec and cp sessions open into one app at
	// once (default 4, 1 to 64, the most a guest serves); one more is
	// refused with a sentence until one ends.
	MaxSessionsPerApp int `toml:"max_sessions_per_app,omitempty"`
	// IdleTimeoutMs closes a session that carried nothing either way
	// (no output, no input, no resize) for this long (default 1800000,
	// half an hour; 1000 to 86400000); its program is killed, and the
	// client is told why.
	IdleTimeoutMs int `toml:"idle_timeout_ms,omitempty"`
}

// The [exec] defaults, and the most sessions a guest's init serves at
// once (cmd/nibrun-init's maxExecSessions).
const (
	DefaultExecSessionsPerApp = 4
	DefaultExecIdleTimeoutMs  = 30 * 60 * 1000
	MaxExecSessionsPerApp     = 64
)

// DefaultMemoryOvercommit admits only what the host can give every guest
// in full.
const DefaultMemoryOvercommit = 1.0

// The [checkpoints] defaults.
const (
	DefaultFreezeTimeoutMs   = 10000
	DefaultMaxConcurrentJobs = 2
)

// Jail says how each guest's VMM is jailed (ours; see docs/microvm.md).
// Every key is optional, and none turns the jail off.
type Jail struct {
	// UIDBase and GIDBase start the ids guests run as: slot n is uid
	// uid_base+n and gid gid_base+n, for every slot n there may be (the
	// count is the most max_apps can be), and the gid after the last is
	// the group of the files every guest reads (default 900000 each). No id
	// of the range may be an account's or group's of /etc/passwd or
	// /etc/group.
	UIDBase int `toml:"uid_base,omitempty"`
	GIDBase int `toml:"gid_base,omitempty"`
	// GuestsCPUWeight is the cpu.weight (1 to 10000) of the cgroup that
	// holds every guest, against the daemon's 100 (default 100): however
	// many guests are busy, the daemon and the proxy keep that share.
	GuestsCPUWeight int `toml:"guests_cpu_weight,omitempty"`
}

// JailRange is the ids the jail reserves: one for every slot there is
// (slot.Max), not only max_apps of them, since a slot keeps its number
// when max_apps is lowered under it.
func (c *Config) JailRange() jail.Range {
	return jail.Range{UIDBase: c.Jail.UIDBase, GIDBase: c.Jail.GIDBase, Count: MaxApps}
}

// Network holds what guests may not reach besides the fixed fence, and
// the name servers they are given.
type Network struct {
	// DeniedEgressV4 and DeniedEgressV6 are the IPv4 and IPv6 CIDRs guests
	// may not reach, beside the fixed fence (the host, private and
	// link-local ranges; see docs/microvm.md). Either list may be empty.
	DeniedEgressV4 []string       `toml:"denied_egress_addresses_v4"`
	DeniedEgressV6 []string       `toml:"denied_egress_addresses_v6"`
	DeniedV4       []netip.Prefix `toml:"-"`
	DeniedV6       []netip.Prefix `toml:"-"`
	// DNSServers are the name servers every guest is given (and may
	// reach through the fence, on port 53). Absent: the host's own
	// resolvers from /etc/resolv.conf other than loopback ones, else
	// 1.1.1.1 and 9.9.9.9. An empty list gives guests none.
	DNSServers []string     `toml:"dns_servers,omitempty"`
	DNS        []netip.Addr `toml:"-"`
}

// DefaultDNS are the name servers guests get when the host has none to
// lend them: Cloudflare's and Quad9's, two operators that publish a
// no-logging policy, so one being down does not leave guests without.
var DefaultDNS = []netip.Addr{netip.MustParseAddr("1.1.1.1"), netip.MustParseAddr("9.9.9.9")}

// ResolvConf is where the host's own name servers are read from.
var ResolvConf = "/etc/resolv.conf"

// HostDNS is the name servers a resolv.conf names, less loopback ones (a
// local stub such as systemd-resolved's 127.0.0.53 answers the host, not a
// guest) and link-local ones (not reachable from a guest's /30), at most
// three as the resolver reads; DefaultDNS when none is left.
func HostDNS(resolvConf []byte) []netip.Addr {
	var out []netip.Addr
	for _, line := range strings.Split(string(resolvConf), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		a, err := netip.ParseAddr(f[1])
		if err != nil || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsUnspecified() || slices.Contains(out, a) {
			continue
		}
		if out = append(out, a.Unmap()); len(out) == 3 {
			break
		}
	}
	if len(out) == 0 {
		return DefaultDNS
	}
	return out
}

// Proxy holds the two optional front doors.
type Proxy struct {
	// Without [proxy.http], no hostname is served.
	HTTP *HTTPProxy `toml:"http"`
	// Without [proxy.raw], an instance that asks for ports beside HTTP is
	// failed.
	Raw *RawProxy `toml:"raw"`
}

// HTTPProxy routes hostnames to apps.
type HTTPProxy struct {
	// ListenAddress is the IP address the proxy listens on (0.0.0.0 for
	// every IPv4 address).
	ListenAddress string `toml:"listen_address"`
	// Port is the TCP port it listens on, 1 to 65535.
	Port int `toml:"port"`
	// Without [proxy.http.tls], the proxy answers plain HTTP.
	TLS *TLS `toml:"tls"`
	// BodyTimeoutMs and SendTimeoutMs bound each read of a request body
	// and each write of an answer (0: the proxy's 60 s, nginx's
	// client_body_timeout and send_timeout).
	BodyTimeoutMs int `toml:"body_timeout_ms,omitempty"`
	SendTimeoutMs int `toml:"send_timeout_ms,omitempty"`
	// MaxConnections and MaxConnectionsPerClient bound the client
	// connections open at once, in all and from one IP address (0: the
	// proxy's 8192 and 256).
	MaxConnections          int `toml:"max_connections,omitempty"`
	MaxConnectionsPerClient int `toml:"max_connections_per_client,omitempty"`
	// MaxBackendConnectionsPerApp bounds the connections to one app in
	// use at once (0: the proxy's 512); a request that finds none free
	// within 5 s is answered 503.
	MaxBackendConnectionsPerApp int `toml:"max_backend_connections_per_app,omitempty"`
	// H2C lets plain-HTTP clients speak HTTP/2 with prior knowledge (off
	// unless true; HTTP/2 over TLS is always offered).
	H2C bool `toml:"h2c,omitempty"`
}

// TLS is the proxy's certificate and key, as PEM files.
type TLS struct {
	// Certificate is the absolute path of the PEM certificate chain.
	Certificate string `toml:"certificate"`
	// Key is the absolute path of its PEM private key.
	Key string `toml:"key"`
}

// RawProxy carries apps' extra ports, tcp and udp, unread.
type RawProxy struct {
	// ListenAddress is the IP address each app's raw ports listen on.
	ListenAddress string `toml:"listen_address"`
	// MaxPortsPerGuest is the most ports one instance may ask for beside
	// HTTP, 1 to 7.
	MaxPortsPerGuest int `toml:"max_ports_per_guest"`
	// TCPIdleTimeoutMs ends a TCP connection nothing crossed for that
	// long (0: 10 min, nginx's stream proxy_timeout); MaxTCPConnections
	// bounds those open across every raw port (0: 4096).
	TCPIdleTimeoutMs  int `toml:"tcp_idle_timeout_ms,omitempty"`
	MaxTCPConnections int `toml:"max_tcp_connections,omitempty"`
	// MaxTCPConnectionsPerClient bounds those from one IP address (0:
	// 256, as [proxy.http] max_connections_per_client);
	// MaxTCPConnectionsPerApp bounds those to one app, all its ports
	// together (0: a quarter of max_tcp_connections), so an app held at
	// its share leaves room to the others.
	MaxTCPConnectionsPerClient int `toml:"max_tcp_connections_per_client,omitempty"`
	MaxTCPConnectionsPerApp    int `toml:"max_tcp_connections_per_app,omitempty"`
	// UDPQueueBytesPerPort bounds what the UDP flows of one port queue
	// together while its app wakes (0: 4 MiB).
	UDPQueueBytesPerPort int `toml:"udp_queue_bytes_per_port,omitempty"`
	// MaxUDPFlowsPerClient bounds the UDP flows of one port from one IP
	// address (0: 256, as max_tcp_connections_per_client), of the 4096
	// a port keeps.
	MaxUDPFlowsPerClient int `toml:"max_udp_flows_per_client,omitempty"`
}

// MaxPortsPerGuest is the most raw ports a host carries for one guest:
// its 8 host ports less the HTTP one.
const MaxPortsPerGuest = 7

// Metrics serves Prometheus /metrics.
type Metrics struct {
	// ListenAddress is the IP address /metrics is served on.
	ListenAddress string `toml:"listen_address"`
	// Port is its TCP port, 1 to 65535, not proxy.http's.
	Port int `toml:"port"`
}

// StoreKind tells an object store's kind.
type StoreKind string

// The store kinds.
const (
	StoreS3  StoreKind = "s3"
	StoreDir StoreKind = "dir"
)

// Store is a parsed store_url: s3://bucket/prefix or an absolute folder.
type Store struct {
	Kind   StoreKind
	Bucket string // s3 only
	Prefix string // s3 only; no leading or trailing slash
	Dir    string // dir only
}

// Limits says what this host can carry for one instance, for
// desired.InstanceProblems.
func (c *Config) Limits() desired.HostLimits {
	l := desired.HostLimits{HTTPProxy: c.Proxy.HTTP != nil, NoImages: c.Images == nil}
	if c.Proxy.Raw != nil {
		l.RawProxy = true
		l.MaxPortsPerGuest = c.Proxy.Raw.MaxPortsPerGuest
	}
	return l
}

// Path is the configuration file this process reads: NIBRUNNER_CONFIG when
// set, DefaultPath otherwise.
func Path() string {
	if p := os.Getenv(EnvVar); p != "" {
		return p
	}
	return DefaultPath
}

// Invalid is the error of a configuration refused whole: every reason.
type Invalid struct {
	File    string
	Reasons []string
}

func (e *Invalid) Error() string {
	return fmt.Sprintf("%s is refused: %s", e.File, strings.Join(e.Reasons, "; "))
}

// MaxFileBytes is the largest config.toml Load reads: the full example is
// about 2 KiB, and parsing a 20 MB list took 5.5 s and 770 MB.
const MaxFileBytes = 1 << 20

// Load reads and validates the configuration at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the host configuration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the host configuration %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &Invalid{File: path, Reasons: []string{fmt.Sprintf("is larger than %d bytes (1 MiB), the most that is read: a host configuration is a few KiB, so this is not one", MaxFileBytes)}}
	}
	c, err := Parse(data)
	if inv, ok := err.(*Invalid); ok {
		inv.File = path
	}
	return c, err
}

// validate checks every value and fills the parsed fields.
func (c *Config) validate(v *validator) {
	if c.MaxApps < 1 || c.MaxApps > MaxApps {
		v.fail("max_apps is %d; it must be 1 to %d (each app owns 8 host ports from 21000)", c.MaxApps, MaxApps)
	}
	if c.LayerCacheBytes < 0 {
		v.fail("layer_cache_bytes is %d; it must be a number of bytes (or absent: no budget)", c.LayerCacheBytes)
	}
	if n := c.MaxConcurrentVMStarts; n < 0 || n > 256 {
		v.fail("max_concurrent_vm_starts is %d; it must be 1 to 256 (or absent: one per CPU)", n)
	}
	v.absolute("paths.state_dir", c.Paths.StateDir)
	v.absolute("paths.runtime_dir", c.Paths.RuntimeDir)
	v.absolute("paths.snapshot_dir", c.Paths.SnapshotDir)
	v.absolute("paths.guest_image_dir", c.Paths.GuestImageDir)
	if im := c.Images; im != nil {
		if im.AuthFile != "" {
			v.absolute("images.auth_file", im.AuthFile)
		}
		if im.CAFile != "" {
			v.absolute("images.ca_file", im.CAFile)
		}
		if im.MaxUnpackedBytes < 0 {
			v.fail("images.max_unpacked_bytes is %d; it must be positive, or absent for 8 GiB", im.MaxUnpackedBytes)
		}
	}
	if IsS3(c.Paths.DesiredStateFile) {
		v.object("paths.desired_state_file", c.Paths.DesiredStateFile)
	} else {
		v.absolute("paths.desired_state_file", c.Paths.DesiredStateFile)
	}
	switch ms := c.Paths.DesiredStatePollMs; {
	case ms == 0:
		c.Paths.DesiredStatePollMs = DefaultDesiredStatePollMs
	case ms < 100 || ms > 3600000:
		v.fail("paths.desired_state_poll_ms is %d; it must be 100 to 3600000", ms)
	}
	if u := c.Paths.ReportedStateURL; u != "" {
		v.object("paths.reported_state_url", u)
	}
	c.Artifacts.Store = v.store("artifacts.store_url", c.Artifacts.StoreURL)
	if c.Volumes.Backend != "local-file" {
		v.fail("volumes.backend is %q; the only backend is \"local-file\"", c.Volumes.Backend)
	}
	v.absolute("volumes.storage_prefix", c.Volumes.StoragePrefix)
	c.Exports.Store = v.store("exports.store_url", c.Exports.StoreURL)
	v.absolute("exports.staging_dir", c.Exports.StagingDir)
	cp := &c.Checkpoints
	if cp.StoreURL == "" {
		cp.StoreURL = c.Artifacts.StoreURL
		cp.Store = c.Artifacts.Store
	} else {
		cp.Store = v.store("checkpoints.store_url", cp.StoreURL)
	}
	if cp.FreezeTimeoutMs == 0 {
		cp.FreezeTimeoutMs = DefaultFreezeTimeoutMs
	} else if cp.FreezeTimeoutMs < 100 || cp.FreezeTimeoutMs > 600000 {
		v.fail("checkpoints.freeze_timeout_ms is %d; it must be 100 to 600000 (a guest's writes wait while it is frozen)", cp.FreezeTimeoutMs)
	}
	if cp.MaxConcurrent == 0 {
		cp.MaxConcurrent = DefaultMaxConcurrentJobs
	} else if cp.MaxConcurrent < 1 || cp.MaxConcurrent > 64 {
		v.fail("checkpoints.max_concurrent is %d; it must be 1 to 64", cp.MaxConcurrent)
	}
	sc := &cp.Schedule
	if sc.IntervalMs == 0 {
		sc.IntervalMs = DefaultScheduleIntervalMs
	}
	if sc.Keep == 0 {
		sc.Keep = DefaultScheduleKeep
	}
	v.schedule("checkpoints.schedule", sc.IntervalMs, sc.Keep)
	ids := make([]string, 0, len(sc.Volumes))
	for id := range sc.Volumes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		key := "checkpoints.schedule.volumes." + id
		if !volumeIDPattern.MatchString(id) {
			v.fail("[%s] names no volume: a volumeId is letters, digits, _ and -, at most 63, starting with a letter or digit", key)
		}
		vs := sc.Volumes[id]
		v.schedule(key, vs.IntervalMs, vs.Keep)
	}
	switch r := c.Admission.MemoryOvercommit; {
	case r == 0:
		c.Admission.MemoryOvercommit = DefaultMemoryOvercommit
	case r < 1 || r > 16:
		v.fail("admission.memory_overcommit is %g; it must be 1 to 16 (1 gives every guest its whole memory; 2 lets guests be given twice what the host has, as long as what they hold fits)", r)
	}
	switch n := c.Exec.MaxSessionsPerApp; {
	case n == 0:
		c.Exec.MaxSessionsPerApp = DefaultExecSessionsPerApp
	case n < 1 || n > MaxExecSessionsPerApp:
		v.fail("exec.max_sessions_per_app is %d; it must be 1 to %d (a guest serves %d sessions at most)", n, MaxExecSessionsPerApp, MaxExecSessionsPerApp)
	}
	switch ms := c.Exec.IdleTimeoutMs; {
	case ms == 0:
		c.Exec.IdleTimeoutMs = DefaultExecIdleTimeoutMs
	case ms < 1000 || ms > 86400000:
		v.fail("exec.idle_timeout_ms is %d; it must be 1000 to 86400000 (a second to a day)", ms)
	}
	j := &c.Jail
	for _, id := range []struct {
		key  string
		v    *int
		base int
	}{{"jail.uid_base", &j.UIDBase, jail.DefaultUIDBase}, {"jail.gid_base", &j.GIDBase, jail.DefaultGIDBase}} {
		if *id.v == 0 {
			*id.v = id.base
		} else if *id.v < 1 || *id.v > 1<<31-1-MaxApps-1 {
			v.fail("%s is %d; it must be 1 to %d, a range no account or group of the host uses", id.key, *id.v, 1<<31-1-MaxApps-1)
		}
	}
	if j.GuestsCPUWeight == 0 {
		j.GuestsCPUWeight = jail.DefaultCPUWeight
	} else if j.GuestsCPUWeight < 1 || j.GuestsCPUWeight > 10000 {
		v.fail("jail.guests_cpu_weight is %d; it must be 1 to 10000 (the daemon's is 100)", j.GuestsCPUWeight)
	}
	c.Network.DeniedV4 = v.prefixes("network.denied_egress_addresses_v4", c.Network.DeniedEgressV4, true)
	c.Network.DeniedV6 = v.prefixes("network.denied_egress_addresses_v6", c.Network.DeniedEgressV6, false)
	if c.Network.DNSServers == nil {
		b, _ := os.ReadFile(ResolvConf) // unreadable: as if it named none
		c.Network.DNS = HostDNS(b)
	} else {
		c.Network.DNS = []netip.Addr{}
		for i, s := range c.Network.DNSServers {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" || a.IsUnspecified() {
				v.fail("network.dns_servers[%d] is %q; it must be an IP address of a name server", i, s)
				continue
			}
			c.Network.DNS = append(c.Network.DNS, a.Unmap())
		}
	}
	type listener struct {
		key  string
		addr netip.Addr
		port int
	}
	var listeners []listener
	if h := c.Proxy.HTTP; h != nil {
		a := v.address("proxy.http.listen_address", h.ListenAddress)
		v.port("proxy.http.port", h.Port)
		listeners = append(listeners, listener{"proxy.http", a, h.Port})
		if h.TLS != nil {
			v.absolute("proxy.http.tls.certificate", h.TLS.Certificate)
			v.absolute("proxy.http.tls.key", h.TLS.Key)
		}
		v.optionalRange("proxy.http.body_timeout_ms", h.BodyTimeoutMs, 100, 3600000, "")
		v.optionalRange("proxy.http.send_timeout_ms", h.SendTimeoutMs, 100, 3600000, "")
		v.optionalRange("proxy.http.max_connections", h.MaxConnections, 1, 1000000, "")
		v.optionalRange("proxy.http.max_connections_per_client", h.MaxConnectionsPerClient, 1, 1000000, "")
		v.optionalRange("proxy.http.max_backend_connections_per_app", h.MaxBackendConnectionsPerApp, 1, 1000000, "")
		if h.MaxConnections > 0 && h.MaxConnectionsPerClient > h.MaxConnections {
			v.fail("proxy.http.max_connections_per_client is %d, more than proxy.http.max_connections (%d); one client can have at most all of them", h.MaxConnectionsPerClient, h.MaxConnections)
		}
	}
	if r := c.Proxy.Raw; r != nil {
		v.address("proxy.raw.listen_address", r.ListenAddress)
		if r.MaxPortsPerGuest < 1 || r.MaxPortsPerGuest > MaxPortsPerGuest {
			v.fail("proxy.raw.max_ports_per_guest is %d; it must be 1 to %d (each app has %d host ports beside its HTTP one)", r.MaxPortsPerGuest, MaxPortsPerGuest, MaxPortsPerGuest)
		}
		v.optionalRange("proxy.raw.tcp_idle_timeout_ms", r.TCPIdleTimeoutMs, 1000, 86400000, "")
		v.optionalRange("proxy.raw.max_tcp_connections", r.MaxTCPConnections, 1, 1000000, "")
		v.optionalRange("proxy.raw.max_tcp_connections_per_client", r.MaxTCPConnectionsPerClient, 1, 1000000, "")
		v.optionalRange("proxy.raw.max_tcp_connections_per_app", r.MaxTCPConnectionsPerApp, 1, 1000000, "")
		all := r.MaxTCPConnections
		if all == 0 {
			all = 4096 // the relay's default
		}
		if r.MaxTCPConnectionsPerClient > all {
			v.fail("proxy.raw.max_tcp_connections_per_client is %d, more than proxy.raw.max_tcp_connections (%d); one client can have at most all of them", r.MaxTCPConnectionsPerClient, all)
		}
		if r.MaxTCPConnectionsPerApp > all {
			v.fail("proxy.raw.max_tcp_connections_per_app is %d, more than proxy.raw.max_tcp_connections (%d); one app can have at most all of them", r.MaxTCPConnectionsPerApp, all)
		}
		v.optionalRange("proxy.raw.max_udp_flows_per_client", r.MaxUDPFlowsPerClient, 1, 4096, " (the UDP flows one port keeps from one address, of the 4096 it keeps)")
		v.optionalRange("proxy.raw.udp_queue_bytes_per_port", r.UDPQueueBytesPerPort, 65536, 1<<30, " (a waking app's queued datagrams, all its flows together)")
	}
	if m := c.Metrics; m != nil {
		a := v.address("metrics.listen_address", m.ListenAddress)
		v.port("metrics.port", m.Port)
		listeners = append(listeners, listener{"metrics", a, m.Port})
	}
	if len(listeners) == 2 && listeners[0].port == listeners[1].port &&
		(listeners[0].addr == listeners[1].addr || listeners[0].addr.IsUnspecified() || listeners[1].addr.IsUnspecified()) {
		v.fail("metrics.port %d is also proxy.http.port on an overlapping address; one of them could not listen", c.Metrics.Port)
	}
}

type validator struct {
	reasons []string
}

func (v *validator) fail(format string, args ...any) {
	v.reasons = append(v.reasons, fmt.Sprintf(format, args...))
}

func (v *validator) absolute(key, p string) {
	if !filepath.IsAbs(p) {
		v.fail("%s is %q; it must be an absolute path", key, p)
	}
}

// volumeIDPattern is desired.json's identifier.
var volumeIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$`)

// schedule checks a schedule's interval and keep (0: left out, its
// default taken elsewhere).
func (v *validator) schedule(key string, intervalMs, keep int) {
	if intervalMs != 0 && (intervalMs < minScheduleIntervalMs || intervalMs > maxScheduleIntervalMs) {
		v.fail("%s.interval_ms is %d; it must be %d (a minute) to %d (31 days)", key, intervalMs, minScheduleIntervalMs, maxScheduleIntervalMs)
	}
	if keep != 0 && (keep < 1 || keep > maxScheduleKeep) {
		v.fail("%s.keep is %d; it must be 1 to %d (disabled = true takes none)", key, keep, maxScheduleKeep)
	}
}

func (v *validator) port(key string, p int) {
	if p < 1 || p > 65535 {
		v.fail("%s is %d; it must be 1 to 65535", key, p)
	}
}

func (v *validator) address(key, s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil {
		v.fail("%s is %q; it must be an IP address (0.0.0.0 for every IPv4 address)", key, s)
	}
	return a
}

func (v *validator) prefixes(key string, list []string, v4 bool) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for i, s := range list {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			v.fail("%s[%d] is %q; it must be a CIDR such as %s", key, i, s, map[bool]string{true: "192.0.2.0/24", false: "2001:db8::/32"}[v4])
		case v4 && !p.Addr().Is4():
			v.fail("%s[%d] is %q; it must be an IPv4 CIDR", key, i, s)
		case !v4 && (!p.Addr().Is6() || p.Addr().Is4In6()):
			v.fail("%s[%d] is %q; it must be an IPv6 CIDR", key, i, s)
		default:
			out = append(out, p.Masked())
		}
	}
	return out
}

// bucketName is S3's rule for bucket names.
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// object checks an s3://bucket/key naming one object.
func (v *validator) object(key, url string) {
	bucket, name, _ := strings.Cut(strings.TrimPrefix(url, "s3://"), "/")
	switch {
	case !IsS3(url):
		v.fail("%s is %q; it must be s3://bucket/key", key, url)
	case !bucketName.MatchString(bucket):
		v.fail("%s is %q; its bucket %q is not an S3 bucket name", key, url, bucket)
	case name == "" || strings.HasSuffix(name, "/"):
		v.fail("%s is %q; it must name an object, s3://bucket/key", key, url)
	}
}

func (v *validator) store(key, url string) Store {
	if rest, ok := strings.CutPrefix(url, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if !bucketName.MatchString(bucket) {
			v.fail("%s is %q; its bucket %q is not an S3 bucket name", key, url, bucket)
		}
		return Store{Kind: StoreS3, Bucket: bucket, Prefix: strings.Trim(prefix, "/")}
	}
	if !filepath.IsAbs(url) {
		v.fail("%s is %q; it must be s3://bucket/prefix or an absolute path", key, url)
	}
	return Store{Kind: StoreDir, Dir: filepath.Clean(url)}
}

// optionalRange refuses a setting given outside lo..hi (0 is absent: its
// default; an explicit 0 is refused by the walk).
func (v *validator) optionalRange(key string, n, lo, hi int, why string) {
	if n != 0 && (n < lo || n > hi) {
		v.fail("%s is %d; it must be %d to %d%s", key, n, lo, hi, why)
	}
}
