package image

import (
	"archive/tar"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"alpnib.dev/internal/atomicfile"
	"alpnib.dev/nibrunner/daemon"
	"alpnib.dev/nibrunner/daemon/daemontest"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/image/tartest"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/volume"
)

// imageHost is a daemon on the fake VMM (guests served in this process)
// whose layer cache pulls images with a puller of opts.
type imageHost struct {
	desiredPath, reportPath string
}

func startImageHost(t *testing.T, opts Options) *imageHost {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	deps, err := daemontest.FolderDeps(ctx, dir, filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	// As serve wires it: the images under the layer cache's folder.
	opts.CacheDir = filepath.Join(dir, "cache", "oci")
	deps.Layers.(*layer.Cache).Images = newPuller(t, opts)
	deps.Volumes = volume.Files{Dir: filepath.Join(dir, "volumes")}
	v, err := fake.New(fake.Options{RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap"), InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	deps.VMM, deps.Router = v, daemon.NoRouter{}
	h := &imageHost{desiredPath: filepath.Join(dir, "control", "desired.json"), reportPath: filepath.Join(dir, "state", daemon.ReportName)}
	d, err := daemon.Open(ctx, daemon.Config{
		HostID: "image-host", DesiredPath: h.desiredPath, StateDir: filepath.Join(dir, "state"),
		MaxApps: 100, CapacityMiB: 8192, VCPUs: 2, AgentVersion: "test", GuestImageVersion: "none",
		Limits: desired.HostLimits{HTTPProxy: true}, Resync: 100 * time.Millisecond, Debounce: 20 * time.Millisecond,
		Logf: t.Logf,
	}, deps)
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = d.Run(rctx) }()
	t.Cleanup(func() { stop(); <-ran; d.Close() })
	return h
}

// write puts doc where the daemon watches, raw (it may be one the daemon
// refuses).
func (h *imageHost) write(t *testing.T, doc []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(h.desiredPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(h.desiredPath, doc, 0o644); err != nil {
		t.Fatal(err)
	}
}

// report is reported.json as it stands, or nil before the first.
func (h *imageHost) report() *reported.HostReportedState {
	b, err := os.ReadFile(h.reportPath)
	if err != nil {
		return nil
	}
	var r reported.HostReportedState
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

// waitFor waits until cond holds of a report, for as long as a loaded
// machine may take, and returns that report.
func (h *imageHost) waitFor(t *testing.T, what string, cond func(*reported.HostReportedState) bool) *reported.HostReportedState {
	t.Helper()
	var got *reported.HostReportedState
	daemontest.WaitLong(t, what, func() bool {
		got = h.report()
		return got != nil && cond(got)
	}, h.reportPath)
	return got
}

func instanceOf(r *reported.HostReportedState, app string) (reported.Instance, bool) {
	for _, in := range r.Instances {
		if string(in.AppId) == app {
			return in, true
		}
	}
	return reported.Instance{}, false
}

// imageApp is an instance whose only layer is the image ref.
func imageApp(name, ref string) desired.DesiredInstance {
	return desired.DesiredInstance{
		AppId: desired.AppId(name), DeploymentId: "d1", VolumeId: desired.VolumeId(name), DesiredState: desired.StateRunning,
		Layers: []desired.DesiredLayer{{Kind: desired.LayerImage, Reference: desired.ImageReference(ref)}},
		Config: desired.AppConfig{
			HttpPort:  8080,
			Command:   desired.Command{Program: "/bin/app", Args: desired.TenantArguments{}, WorkingDirectory: "/srv", Environment: desired.TenantEnvironment{}},
			Resources: desired.InstanceResources{VcpuCount: 1, MemoryMib: 128},
			HealthCheck: desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/healthz", IntervalMs: 100, TimeoutMs: 3000,
				GracePeriodMs: 2000, HealthyThreshold: 1, UnhealthyThreshold: 5},
			RestartPolicy: desired.RestartPolicy{MaxRestarts: 2, InitialBackoffMs: 100, MaxBackoffMs: 400, BackoffFactor: 2, ResetAfterMs: 600000},
		},
		Hostnames: []desired.AppHostname{},
	}
}

// imageDoc is a document running the instances, each on its own volume.
func imageDoc(t *testing.T, instances ...desired.DesiredInstance) []byte {
	t.Helper()
	d := desired.HostDesiredState{HostId: "image-host", Volumes: []desired.DesiredVolume{}, Instances: instances,
		Checkpoints: []desired.DesiredCheckpoint{}, Exports: []desired.DesiredExport{}}
	for _, in := range instances {
		d.Volumes = append(d.Volumes, desired.DesiredVolume{VolumeId: in.VolumeId, AppId: in.AppId, SizeBytes: 1 << 20, DesiredState: desired.Present})
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each way a pull fails ends in reported.json as the instance's own
// sentence, while an app whose image pulls runs beside them; and a tag
// without a digest is the host's refusal of the document, the apps of the
// last accepted one running on.
func TestEachImageFailureIsItsInstancesSentenceInReportedJSONWhileTheOthersRun(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	private := startRegistry(t, registryOpts{auth: true})
	good := reg.push(t, "apps/good", testImage(t, tarLayer(t, file("srv/index.html", "good"))))

	corrupt := twoLayers(t)
	corruptRef := reg.push(t, "apps/corrupt", corrupt)
	bad := reg.corrupt(t, corrupt)

	big := file("big", "")
	big.Zeros = 3 << 20
	cases := []struct {
		app, ref string
		want     []string
	}{
		{"mismatch", corruptRef, []string{"do not hash to it", bad.String(), "nothing of it was unpacked"}},
		{"unauthorized", private.push(t, "apps/private", twoLayers(t)), []string{"refused the credentials (HTTP 401)", "put a login for \"" + private.addr + "\""}},
		{"escape", reg.push(t, "apps/escape", testImage(t, tarLayer(t, file("../../../etc/cron.d/evil", "x")))),
			[]string{`"../../../etc/cron.d/evil"`, "climbs out of the image's root"}},
		{"device", reg.push(t, "apps/device", testImage(t, tarLayer(t, dir("dev/"), tartest.Device("dev/sda", tar.TypeBlock)))),
			[]string{`"dev/sda"`, "device node", "remove it from the image"}},
		{"toolarge", reg.push(t, "apps/big", testImage(t, tarLayer(t, big))), []string{"more than the limit of 1048576 bytes"}},
		{"unknown", reg.addr + "/apps/good@sha256:" + strings.Repeat("ab", 32), []string{"has no manifest sha256:abab", "check the digest"}},
	}
	o := reg.options(t)
	o.PlainHTTP = append(o.PlainHTTP, private.addr) // reached, and no login for it
	o.MaxUnpackedBytes = 1 << 20
	h := startImageHost(t, o)
	instances := []desired.DesiredInstance{imageApp("web", good)}
	for _, c := range cases {
		instances = append(instances, imageApp(c.app, c.ref))
	}
	h.write(t, imageDoc(t, instances...))

	r := h.waitFor(t, "web runs and every other app reports its failure", func(r *reported.HostReportedState) bool {
		if in, ok := instanceOf(r, "web"); !ok || in.State != reported.InstanceRunning {
			return false
		}
		for _, c := range cases {
			if in, ok := instanceOf(r, c.app); !ok || !strings.Contains(in.Message, c.want[0]) {
				return false
			}
		}
		return true
	})
	for _, c := range cases {
		in, _ := instanceOf(r, c.app)
		t.Logf("%s: %s: %s", c.app, in.State, in.Message)
		name := layer.Spec{Kind: layer.OCIImage, Reference: c.ref}.Name()
		for _, w := range append(c.want, name+": ") {
			if !strings.Contains(in.Message, w) {
				t.Errorf("%s's message should contain %q: %s", c.app, w, in.Message)
			}
		}
		if strings.HasSuffix(in.Message, "…") {
			t.Errorf("%s's message was cut at %d characters: %s", c.app, reported.MaxMessageLen, in.Message)
		}
	}

	// A tag alone refuses the whole document, saying how to pin it; the
	// apps of the last accepted one run on.
	tagged := imageApp("tagged", reg.addr+"/apps/good:test")
	h.write(t, imageDoc(t, append(instances, tagged)...))
	r = h.waitFor(t, "the tagged document is refused", func(r *reported.HostReportedState) bool {
		return strings.Contains(r.Message, "names no digest")
	})
	t.Logf("host: %s", r.Message)
	for _, w := range []string{"instances[7].layers[0].reference", "skopeo inspect", "crane digest"} {
		if !strings.Contains(r.Message, w) {
			t.Errorf("the host's message should contain %q: %s", w, r.Message)
		}
	}
	if in, ok := instanceOf(r, "web"); !ok || in.State != reported.InstanceRunning {
		t.Errorf("web should run on after the refused document: %+v", in)
	}
	if _, ok := instanceOf(r, "tagged"); ok {
		t.Error("the refused document's app is in the report")
	}
}

// Two apps naming one image pull it once: the registry's log shows one GET
// of each blob, and both run.
func TestTwoAppsNamingOneImagePullEachBlobOnce(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	img := twoLayers(t)
	ref := reg.push(t, "apps/shared", img)
	h := startImageHost(t, reg.options(t))
	h.write(t, imageDoc(t, imageApp("one", ref), imageApp("two", ref)))
	h.waitFor(t, "both apps run", func(r *reported.HostReportedState) bool {
		a, _ := instanceOf(r, "one")
		b, _ := instanceOf(r, "two")
		return a.State == reported.InstanceRunning && b.State == reported.InstanceRunning
	})
	m, _ := img.Manifest()
	for _, l := range append(m.Layers, m.Config) {
		if n := reg.blobGets("apps/shared", l.Digest); n != 1 {
			t.Errorf("the registry's log shows %d GETs of blob %s, want 1", n, l.Digest)
		}
	}
}

// gatedProxy forwards to a registry and holds the GETs of one blob after
// half its bytes until release is closed.
func gatedProxy(t *testing.T, upstream string, blob v1.Hash, release <-chan struct{}) string {
	t.Helper()
	return halfBlobProxy(t, upstream, blob, func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-release:
			_, _ = w.Write(body[len(body)/2:])
		case <-r.Context().Done():
		}
	})
}

// While an image pulls, its instance's message in reported.json says how
// far: the bytes fetched of the image's total, and unpacked.
func TestAPullingImageShowsItsBytesInTheInstancesMessage(t *testing.T) {
	reg := startRegistry(t, registryOpts{})
	big := file("srv/big", "")
	big.Zeros = 1 << 20
	img := testImage(t, tarLayer(t, file("srv/index.html", "hello")), tarLayer(t, big))
	m, _ := img.Manifest()
	var total int64
	for _, l := range m.Layers {
		total += l.Size
	}
	ref := reg.push(t, "apps/slow", img)
	release := make(chan struct{})
	proxy := gatedProxy(t, reg.addr, m.Layers[1].Digest, release)
	o := reg.options(t)
	o.PlainHTTP = []string{proxy}
	o.StallTimeout = 10 * time.Minute // the test holds the blob, not the registry
	h := startImageHost(t, o)
	ref = strings.Replace(ref, reg.addr, proxy, 1)
	h.write(t, imageDoc(t, imageApp("slow", ref)))

	// The sentence begins as layer.Pull says it and counts the image's
	// compressed bytes.
	prefix := strings.TrimSuffix(layer.Pull{Reference: ref}.Sentence(), "reading its manifest")
	fetched := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(\S+ \S+) of (\S+ \S+) fetched, \S+ \S+ unpacked`)
	want := fetched.FindStringSubmatch(layer.Pull{Reference: ref, Phase: "layers", FetchTotal: total}.Sentence())
	var msg string
	h.waitFor(t, "the instance's message shows bytes fetched of the image's total", func(r *reported.HostReportedState) bool {
		in, ok := instanceOf(r, "slow")
		msg = string(in.State) + ": " + in.Message
		g := fetched.FindStringSubmatch(in.Message)
		return ok && g != nil && g[1] != "0 bytes" && g[2] == want[2]
	})
	t.Logf("while pulling: %s", msg)
	close(release)
	h.waitFor(t, "the app runs once its image is pulled", func(r *reported.HostReportedState) bool {
		in, ok := instanceOf(r, "slow")
		return ok && in.State == reported.InstanceRunning && !strings.Contains(in.Message, "pulling")
	})
}
