package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/layer"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

// hangingLayers hangs every preparation that names digest until released
// (or its context ends), saying so on entered.
type hangingLayers struct {
	Layers
	digest  string
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (l *hangingLayers) PrepareAll(ctx context.Context, specs []layer.Spec) ([]layer.Image, error) {
	for _, s := range specs {
		if s.Digest == l.digest {
			l.once.Do(func() { close(l.entered) })
			select {
			case <-l.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return l.Layers.PrepareAll(ctx, specs)
}

// otherLayer puts a second filesystem layer in the host's store and
// returns its digest and key.
func (h *host) otherLayer(t *testing.T) (string, string) {
	t.Helper()
	obj := append([]byte("hsqs"), make([]byte, 8188)...)
	if err := os.WriteFile(filepath.Join(h.dir, "store", "layers", "other.squashfs"), obj, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(obj)
	return hex.EncodeToString(sum[:]), "layers/other.squashfs"
}

// onRequestAsleep runs app a on request, waits for its first boot, and puts
// it to sleep.
func onRequestAsleep(t *testing.T, h *host, d *Daemon, others ...desired.DesiredInstance) desired.DesiredInstance {
	t.Helper()
	a := h.app("a", "a1", withState(desired.StateOnRequest))
	h.write(t, doc(append([]desired.DesiredInstance{a}, others...)...))
	h.waitFor(t, "a's first boot", allIn(reported.InstanceRunning, "a"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Sleep(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a asleep", allIn(reported.InstanceIdle, "a"))
	return a
}

func TestAWakeReturnsOnceItsAppIsHealthyWhileAnotherAppsLayerFetchHangs(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	digest, key := h.otherLayer(t)
	hang := &hangingLayers{Layers: deps.Layers, digest: digest, entered: make(chan struct{}), release: make(chan struct{})}
	defer close(hang.release)
	deps.Layers = hang
	d, _ := h.run(t, deps)
	a := onRequestAsleep(t, h, d)

	b := h.app("b", "b1")
	b.Layers[0].Digest, b.Layers[0].ObjectKey = desired.Sha256Digest(digest), desired.ObjectKey(key)
	h.write(t, doc(a, b))
	<-hang.entered

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatalf("a wake while b's layer fetch hangs: %v", err)
	}
	d.mu.Lock()
	healthy := answering(d.apps.byID["a"])
	d.mu.Unlock()
	if !healthy {
		t.Fatal("the wake returned before a's health check passed")
	}
	r := h.waitFor(t, "a reported running while b still waits for its layer", allIn(reported.InstanceRunning, "a"))
	if b := instance(r, "b"); b.State == reported.InstanceRunning {
		t.Fatalf("b runs although its layer never arrived: %+v", b)
	}
}

// blockingVMM blocks List while armed, as a VMM stuck on one guest would
// hold up a pass.
type blockingVMM struct {
	*fake.VMM
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (v *blockingVMM) List(ctx context.Context) ([]vmm.Status, error) {
	if v.armed.Load() {
		v.once.Do(func() { close(v.entered) })
		select {
		case <-v.release:
		case <-ctx.Done():
		}
	}
	return v.VMM.List(ctx)
}

func TestBackendRoutesAndAWakeOfAnUpAppAnswerWhileAPassIsBlockedInTheVMM(t *testing.T) {
	h := newHost(t)
	deps, fv, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	bv := &blockingVMM{VMM: fv, entered: make(chan struct{}), release: make(chan struct{})}
	deps.VMM = bv
	d, _ := h.run(t, deps)
	h.write(t, doc(h.app("a", "a1", withState(desired.StateOnRequest))))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	h.deadlineWait(t, func() bool { return d.Backend("a") != "" && routeState(d, "a.apps.example.net") == route.Up })
	want := d.Backend("a")

	bv.armed.Store(true)
	d.Kick()
	<-bv.entered
	defer close(bv.release)

	answered := make(chan error, 1)
	go func() {
		if got := d.Backend("a"); got != want {
			t.Errorf("Backend during a blocked pass: %q, want %q", got, want)
		}
		if s := routeState(d, "a.apps.example.net"); s != route.Up {
			t.Errorf("the route during a blocked pass says %q", s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		answered <- d.Wake(ctx, "a")
	}()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("a wake of an up app during a blocked pass: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request path waited behind a pass blocked in the VMM")
	}
}

func routeState(d *Daemon, hostname string) route.State {
	for _, r := range d.routes.table.Load().Routes() {
		if r.Hostname == hostname {
			return r.State
		}
	}
	return ""
}

// countingWakes counts the VMM's wakes, and those that restored.
type countingWakes struct {
	*fake.VMM
	wakes, restores atomic.Int32
}

func (v *countingWakes) Wake(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	v.wakes.Add(1)
	st, err := v.VMM.Wake(ctx, spec)
	if st.Restored {
		v.restores.Add(1)
	}
	return st, err
}

func TestFiftyConcurrentWakesLeadToOneRestore(t *testing.T) {
	h := newHost(t)
	deps, fv, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	cv := &countingWakes{VMM: fv}
	deps.VMM = cv
	d, _ := h.run(t, deps)
	onRequestAsleep(t, h, d)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, 50)
	for range 50 {
		go func() { errs <- d.Wake(ctx, "a") }()
	}
	for range 50 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n, r := cv.wakes.Load(), cv.restores.Load(); n != 1 || r != 1 {
		t.Fatalf("50 concurrent wakes made %d VMM wakes (%d restored), want one restore", n, r)
	}
	if l, _ := fv.List(ctx); len(l) != 1 {
		t.Fatalf("after the wakes: %+v, want one guest", l)
	}
}

func TestAWakeOfAClosedDaemonIsRefused(t *testing.T) {
	h := newHost(t)
	d, _, stop := h.start(t)
	h.write(t, doc(h.app("a", "a1", withState(desired.StateOnRequest))))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	stop()
	if err := d.Wake(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("a wake after Close: %v, want ErrClosed", err)
	}
}

func TestTheProxyDoesNotDependOnTheDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "alpnib.dev/nibrunner/proxy").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "alpnib.dev/nibrunner/daemon" {
			t.Fatal("nibrunner/proxy depends on nibrunner/daemon; the request path must depend only on nibrunner/route")
		}
	}
}

// sayingVMM is the fake VMM whose exited guests say why, as nibrun-init's
// exit report does.
type sayingVMM struct {
	*fake.VMM
	said string
}

func (v sayingVMM) List(ctx context.Context) ([]vmm.Status, error) {
	l, err := v.VMM.List(ctx)
	for i := range l {
		if l[i].State == vmm.Exited {
			l[i].Message = v.said
		}
	}
	return l, err
}

func TestTheGuestsOwnFailureReasonReachesTheReport(t *testing.T) {
	h := newHost(t)
	deps, fv, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	const said = "out of restarts: /app/server exited with code 3 after 2 restarts"
	deps.VMM = sayingVMM{VMM: fv, said: said}
	h.run(t, deps)
	app := h.app("a", "a1", withEnv("FAKE_EXIT_AFTER_MS", "150", "FAKE_EXIT_CODE", "3"))
	app.Config.RestartPolicy.MaxRestarts = 0
	h.write(t, doc(app))
	r := h.waitFor(t, "a out of restarts", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		return a != nil && strings.HasPrefix(a.Message, "out of restarts")
	})
	if msg := instance(r, "a").Message; !strings.Contains(msg, said+" (exit code 3)") {
		t.Fatalf("the report says %q, not what the guest said", msg)
	}
}
