package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/clock"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/jail"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/volume"
	"alpnib.dev/nibrunner/watch"
)

func TestMain(m *testing.M) {
	// This binary is the jail's launcher too, as nibrunnerd's main is.
	if jail.IsLauncher(os.Args) {
		os.Exit(jail.RunLauncher(os.Args))
	}
	fake.RunGuestIfAsked()
	if dir := os.Getenv("NIBRUN_TEST_DAEMON_DIR"); dir != "" {
		os.Exit(runDaemonProcess(dir))
	}
	os.Exit(m.Run())
}

// host is one test host: its folders, a layer in its artifact store, and
// the clock its daemon reads (which a test may move forward).
type host struct {
	dir         string
	layerDigest string
	capacityMiB uint64
	offset      atomic.Int64 // added to time.Now
	slowLayers  time.Duration
	maxApps     int // 0 means 100
	layerGrace  time.Duration
	// source is its document's source, when not the watched file.
	source Source
	// daemon is the daemon this test runs in its own process (h.run,
	// h.watch), whose passes the waits below wait on; nil when it runs in
	// a child process, and the waits watch reported.json instead.
	daemon atomic.Pointer[Daemon]
	// log is what the daemons of this host logged, shown when the test
	// fails.
	log testenv.SyncBuffer
	// restarts: the test restarts an app on purpose (expectRestarts).
	// Otherwise any restart a daemon of this host logs fails the test,
	// whether or not an assertion looks at it.
	restarts atomic.Bool
}

// expectRestarts declares that this test restarts apps on purpose (a
// crash, a failed start or wake, a failing health check), so its
// daemon's restarts do not fail it.
func (h *host) expectRestarts() { h.restarts.Store(true) }

// restartLine is the line a daemon logs when it restarts an app
// (dispatch, act.go).
const restartLine = "nibrunnerd: restart "

// unexpectedRestart is the first restart logged in log, or "".
func unexpectedRestart(log string) string {
	i := strings.Index(log, restartLine)
	if i < 0 {
		return ""
	}
	line := log[i:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	return line
}

func newHost(t testing.TB) *host {
	t.Helper()
	h := &host{dir: t.TempDir(), capacityMiB: 8192}
	// A filesystem layer only needs the squashfs magic for the fake VMM.
	obj := append([]byte("hsqs"), make([]byte, 4092)...)
	if err := os.MkdirAll(filepath.Join(h.dir, "store", "layers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "store", "layers", "base.squashfs"), obj, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(obj)
	h.layerDigest = hex.EncodeToString(sum[:])
	t.Cleanup(func() { fake.KillAll(filepath.Join(h.dir, "run")) })
	// Registered before the daemons' own cleanups, so it runs after they
	// stopped and logged all they will.
	t.Cleanup(func() {
		if line := unexpectedRestart(h.log.String()); line != "" && !h.restarts.Load() {
			t.Errorf("a daemon of this test restarted an app, which no test step asked for (a test that restarts on purpose says h.expectRestarts()): %s", line)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("what the daemon logged:\n%s", h.log.String())
		}
	})
	return h
}

func (h *host) desiredPath() string { return filepath.Join(h.dir, "control", "desired.json") }
func (h *host) reportPath() string  { return filepath.Join(h.dir, "state", ReportName) }
func (h *host) runDir() string      { return filepath.Join(h.dir, "run") }

// clock is the host's clock: the machine's, moved forward by offset. Its
// timers are the machine's, so a test that moves it makes the time a
// daemon reads jump, as a host whose clock is set forward does.
func (h *host) clock() clock.Clock { return offsetClock{h} }

type offsetClock struct{ h *host }

func (c offsetClock) Now() time.Time                     { return time.Now().Add(time.Duration(c.h.offset.Load())) }
func (offsetClock) NewTimer(d time.Duration) clock.Timer { return clock.Real.NewTimer(d) }

// slowLayers delays each layer preparation, to stretch a pass.
type slowLayers struct {
	Layers
	delay time.Duration
}

func (s slowLayers) PrepareAll(ctx context.Context, specs []layer.Spec) ([]layer.Image, error) {
	time.Sleep(s.delay)
	return s.Layers.PrepareAll(ctx, specs)
}

func (h *host) config() Config {
	maxApps := h.maxApps
	if maxApps == 0 {
		maxApps = 100
	}
	return Config{
		HostID: "test-host", DesiredPath: h.desiredPath(), StateDir: filepath.Join(h.dir, "state"),
		MaxApps: maxApps, CapacityMiB: h.capacityMiB, VCPUs: 2, AgentVersion: "test", GuestImageVersion: "none",
		Limits:     desired.HostLimits{HTTPProxy: true, RawProxy: true, MaxPortsPerGuest: 7},
		Resync:     100 * time.Millisecond,
		Debounce:   20 * time.Millisecond,
		Clock:      h.clock(),
		LayerGrace: h.layerGrace,
		Source:     h.source,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(&h.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
		},
	}
}

func (h *host) deps(inProcess bool) (Deps, *fake.VMM, error) {
	v, err := fake.New(fake.Options{RuntimeDir: h.runDir(), SnapshotDir: filepath.Join(h.dir, "snap"), InProcess: inProcess})
	if err != nil {
		return Deps{}, nil, err
	}
	st, err := store.NewDir(filepath.Join(h.dir, "store"))
	if err != nil {
		return Deps{}, nil, err
	}
	cache, err := layer.NewCache(filepath.Join(h.dir, "cache"), st)
	if err != nil {
		return Deps{}, nil, err
	}
	var layers Layers = cache
	if h.slowLayers > 0 {
		layers = slowLayers{cache, h.slowLayers}
	}
	cps, exps, err := folderBackground(h.dir)
	if err != nil {
		return Deps{}, nil, err
	}
	return Deps{
		VMM: v, Layers: layers,
		Volumes:     volume.Files{Dir: filepath.Join(h.dir, "volumes")},
		Checkpoints: cps, Exports: exps,
		Router: NoRouter{},
	}, v, nil
}

// start opens and runs a daemon on the fake VMM in this process until the
// test ends (or the returned stop is called).
func (h *host) start(t *testing.T) (*Daemon, *fake.VMM, func()) {
	t.Helper()
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	d, stop := h.run(t, deps)
	return d, v, stop
}

// run opens a daemon on deps and runs it in this process until the test
// ends (or the returned stop is called).
func (h *host) run(t *testing.T, deps Deps) (*Daemon, func()) {
	t.Helper()
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	return d, h.runOpened(t, d)
}

// runOpened runs d, opened on this host, until the test ends (or the
// returned stop is called).
func (h *host) runOpened(t *testing.T, d *Daemon) func() {
	t.Helper()
	h.watch(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		h.daemon.CompareAndSwap(d, nil)
		d.Close()
	}
	t.Cleanup(stop)
	return stop
}

// runDaemonProcess is the daemon as a child process, for the tests that
// kill it.
func runDaemonProcess(dir string) int {
	h := &host{dir: dir, capacityMiB: 8192}
	if ms, err := strconv.Atoi(os.Getenv("NIBRUN_TEST_SLOW_LAYERS_MS")); err == nil {
		h.slowLayers = time.Duration(ms) * time.Millisecond
	}
	deps, _, err := h.deps(false)
	if err == nil {
		err = backgroundFromEnv(&deps, dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer cancel()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d.Close()
	return 0
}

type appOpt func(*desired.DesiredInstance)

func withEnv(kv ...string) appOpt {
	return func(in *desired.DesiredInstance) {
		for i := 0; i+1 < len(kv); i += 2 {
			in.Config.Command.Environment[kv[i]] = desired.TenantValue(kv[i+1])
		}
	}
}

func withState(s desired.DesiredInstanceState) appOpt {
	return func(in *desired.DesiredInstance) { in.DesiredState = s }
}

func withMemory(mib uint32) appOpt {
	return func(in *desired.DesiredInstance) { in.Config.Resources.MemoryMib = mib }
}

func (h *host) app(name, deployment string, opts ...appOpt) desired.DesiredInstance {
	in := desired.DesiredInstance{
		AppId: desired.AppId(name), DeploymentId: desired.DeploymentId(deployment), VolumeId: desired.VolumeId(name + "-data"),
		DesiredState: desired.StateRunning,
		Layers:       []desired.DesiredLayer{{Kind: desired.LayerFilesystem, Digest: desired.Sha256Digest(h.layerDigest), ObjectKey: "layers/base.squashfs"}},
		Config: desired.AppConfig{
			HttpPort:  8080,
			Command:   desired.Command{Program: "/app/server", Args: desired.TenantArguments{}, WorkingDirectory: "/data", Environment: desired.TenantEnvironment{}},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 128},
			// Lenient enough that a loaded CI machine does not fail a
			// healthy guest; the tests that want failures say so.
			HealthCheck: desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/healthz", IntervalMs: 100, TimeoutMs: 3000,
				GracePeriodMs: 2000, HealthyThreshold: 1, UnhealthyThreshold: 5},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 2, InitialBackoffMs: 100, MaxBackoffMs: 400, BackoffFactor: 2, ResetAfterMs: 600000},
		},
		Hostnames: []desired.AppHostname{{Hostname: desired.Hostname(name + ".apps.example.net"), Kind: desired.HostnamePlatform}},
	}
	for _, o := range opts {
		o(&in)
	}
	return in
}

// doc is a document running instances, each on its own present volume.
func doc(instances ...desired.DesiredInstance) *desired.HostDesiredState {
	d := &desired.HostDesiredState{HostId: "test-host", Volumes: []desired.DesiredVolume{}, Instances: []desired.DesiredInstance{},
		Checkpoints: []desired.DesiredCheckpoint{}, Exports: []desired.DesiredExport{}}
	for _, in := range instances {
		d.Instances = append(d.Instances, in)
		d.Volumes = append(d.Volumes, desired.DesiredVolume{VolumeId: in.VolumeId, AppId: in.AppId, SizeBytes: 1 << 20, DesiredState: desired.Present})
	}
	return d
}

func (h *host) write(t testing.TB, d *desired.HostDesiredState) string {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := desired.Decode(b); err != nil {
		t.Fatalf("the test wrote a document the daemon refuses: %v", err)
	}
	return h.writeRaw(t, b)
}

func (h *host) writeRaw(t testing.TB, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.desiredPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(h.desiredPath(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (h *host) readReport(t testing.TB) *reported.HostReportedState {
	t.Helper()
	b, err := os.ReadFile(h.reportPath())
	if err != nil {
		return nil
	}
	var r reported.HostReportedState
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("reported.json is not JSON (it must be written atomically): %v", err)
	}
	// Every report a test reads must also be what the published schema
	// promises.
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := reportSchema(t).Validate(v); err != nil {
		t.Fatalf("reported.json breaks docs/reported-state.schema.json: %v\n%s", err, b)
	}
	return &r
}

// watch makes d the daemon whose passes this host's waits wait on.
func (h *host) watch(d *Daemon) { h.daemon.Store(d) }

// waitFor waits until reported.json satisfies cond, reading it again after
// each pass (or each change of the file, when the daemon runs in a child
// process).
func (h *host) waitFor(t testing.TB, what string, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
	t.Helper()
	var last *reported.HostReportedState
	ok := h.until(t, time.Minute, func() bool {
		if r := h.readReport(t); r != nil {
			last = r
			return cond(r)
		}
		return false
	})
	if !ok {
		b, _ := json.MarshalIndent(last, "", "  ")
		t.Fatalf("timed out waiting for %s; last report:\n%s", what, b)
	}
	return last
}

// until waits until cond holds, asking again after each pass of the
// daemon (each change of reported.json, when it runs in a child process):
// everything a test waits for is what a pass, or a worker's commit (which
// asks for a pass), changes. It gives up, answering false, after within
// (a minute for the fake VMM: generous, because CI runs every package's
// race-enabled tests at once on two cores).
func (h *host) until(t testing.TB, within time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	next, stop := h.passes()
	defer stop()
	for {
		// The signal is taken before cond is asked, so a pass that ends
		// in between is not missed.
		passed := next()
		if cond() {
			return true
		}
		select {
		case <-passed:
		case <-deadline.C:
			return false
		}
	}
}

// passes returns what until waits on between two questions: the end of
// the in-process daemon's next pass, or else the next change of
// reported.json (an inotify watch of its folder, package watch), and what
// ends the watch.
func (h *host) passes() (next func() <-chan struct{}, stop func()) {
	if d := h.daemon.Load(); d != nil {
		return d.afterPass, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	docs := make(chan watch.Document)
	w := &watch.Watcher{Path: h.reportPath(), Debounce: time.Millisecond, Backstop: time.Second}
	go func() { _ = w.Run(ctx, docs) }()
	changed := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-docs:
				select {
				case changed <- struct{}{}:
				default:
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() <-chan struct{} { return changed }, cancel
}

func instance(r *reported.HostReportedState, app string) *reported.Instance {
	for i := range r.Instances {
		if string(r.Instances[i].AppId) == app {
			return &r.Instances[i]
		}
	}
	return nil
}

func volumeOf(r *reported.HostReportedState, id string) *reported.Volume {
	for i := range r.Volumes {
		if string(r.Volumes[i].VolumeId) == id {
			return &r.Volumes[i]
		}
	}
	return nil
}

func allIn(state reported.InstanceState, apps ...string) func(*reported.HostReportedState) bool {
	return func(r *reported.HostReportedState) bool {
		for _, a := range apps {
			if in := instance(r, a); in == nil || in.State != state {
				return false
			}
		}
		return true
	}
}

// deadlineWait waits, as until does, until cond holds, and fails the test
// if it does not within a minute.
func (h *host) deadlineWait(t testing.TB, cond func() bool) {
	t.Helper()
	if !h.until(t, time.Minute, cond) {
		t.Fatal("timed out")
	}
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// reportSchema compiles docs/reported-state.schema.json once.
func reportSchema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() {
		const path = "../../docs/reported-state.schema.json"
		f, err := os.Open(path)
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		doc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		if schemaErr = c.AddResource(path, doc); schemaErr != nil {
			return
		}
		schema, schemaErr = c.Compile(path)
	})
	if schemaErr != nil {
		t.Fatalf("compile the report schema: %v", schemaErr)
	}
	return schema
}

// folderBackground returns the real checkpoint store and export writer,
// both over folder stores under dir.
func folderBackground(dir string) (*checkpoint.Store, *export.Writer, error) {
	ctx := context.Background()
	objects, err := store.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		return nil, nil, err
	}
	cps, err := checkpoint.Open(ctx, checkpoint.Options{Dir: filepath.Join(dir, "checkpoints"), Objects: objects, Prefix: "checkpoints/"})
	if err != nil {
		return nil, nil, err
	}
	exps, err := export.Open(ctx, export.Options{Objects: objects, StagingDir: filepath.Join(dir, "export-staging"), RecordDir: filepath.Join(dir, "exports")})
	return cps, exps, err
}

func TestTheHarnessFindsARestartInTheDaemonsLog(t *testing.T) {
	log := "05:00:00.000 nibrunnerd: accepted desired.json (sha256 0123456789ab): 1 instances, 1 volumes\n" +
		"05:00:01.000 nibrunnerd: restart a (restart 1 of its budget): the app exited with code 3\n" +
		"05:00:02.000 nibrunnerd: restart a (restart 2 of its budget): the app exited with code 3\n"
	if got, want := unexpectedRestart(log), "nibrunnerd: restart a (restart 1 of its budget): the app exited with code 3"; got != want {
		t.Fatalf("unexpectedRestart = %q, want %q", got, want)
	}
	if got := unexpectedRestart("05:00:00.000 nibrunnerd: accepted desired.json\n05:00:01.000 nibrunnerd: restarted nothing\n"); got != "" {
		t.Fatalf("unexpectedRestart found %q in a log with no restart", got)
	}
}
