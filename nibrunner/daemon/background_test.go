package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm/fake"
)

// heldExports writes an export only once the test lets it go, telling the
// test when a write has begun and which freezer it was handed.
type heldExports struct {
	started chan checkpoint.Volume
	ended   chan error
	release chan struct{}
	mu      sync.Mutex
	written map[string]ExportInfo
}

func newHeldExports() *heldExports {
	return &heldExports{started: make(chan checkpoint.Volume, 4), ended: make(chan error, 4), release: make(chan struct{}), written: map[string]ExportInfo{}}
}

func (h *heldExports) List(context.Context) (map[string]ExportInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]ExportInfo, len(h.written))
	for k, v := range h.written {
		out[k] = v
	}
	return out, nil
}

func (h *heldExports) Write(ctx context.Context, e desired.DesiredExport, vol checkpoint.Volume) (ExportInfo, error) {
	if vol.Freezer != nil {
		if err := vol.Freezer.Freeze(ctx); err != nil {
			return ExportInfo{}, err
		}
		defer vol.Freezer.Thaw(context.WithoutCancel(ctx))
	}
	h.started <- vol
	select {
	case <-h.release:
	case <-ctx.Done():
		h.ended <- ctx.Err()
		return ExportInfo{}, ctx.Err()
	}
	info := ExportInfo{SizeBytes: 42, ReadyAt: time.Now().UTC()}
	h.mu.Lock()
	h.written[string(e.ExportId)] = info
	h.mu.Unlock()
	return info, nil
}

func (h *heldExports) Forget(_ context.Context, id string) error {
	h.mu.Lock()
	delete(h.written, id)
	h.mu.Unlock()
	return nil
}

func startHeld(t *testing.T, h *host) (*Daemon, *fake.VMM, *heldExports) {
	t.Helper()
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	held := newHeldExports()
	deps.Exports = held
	d, _ := h.run(t, deps)
	return d, v, held
}

func TestAnExportRunsBesideThePassesSoAStartAndAWakeDuringItAreNotDelayed(t *testing.T) {
	h := newHost(t)
	d, v, held := startHeld(t, h)
	a := h.app("a", "a1")
	sleeper := h.app("s", "s1", withState(desired.StateOnRequest))
	dd := doc(a, sleeper)
	h.write(t, dd)
	h.waitFor(t, "a and s up", allIn(reported.InstanceRunning, "a", "s"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Sleep(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "s asleep", allIn(reported.InstanceIdle, "s"))

	dd.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "a", VolumeId: "a-data", ObjectKey: "a.tar.gz", DesiredState: desired.Present}}
	h.write(t, dd)
	vol := <-held.started
	if vol.Freezer == nil || !v.Frozen("a") {
		t.Error("the export of a running app's volume did not freeze its guest")
	}
	h.waitFor(t, "e1 preparing", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && r.Exports[0].State == reported.ExportPreparing
	})

	// While e1 is held: a new app starts, and the sleeper wakes.
	dd.Instances = append(dd.Instances, h.app("b", "b1"))
	dd.Volumes = append(dd.Volumes, doc(h.app("b", "b1")).Volumes...)
	h.write(t, dd)
	h.waitFor(t, "b started during the export", allIn(reported.InstanceRunning, "b"))
	if err := d.Wake(ctx, "s"); err != nil {
		t.Fatalf("a wake during the export: %v", err)
	}
	h.waitFor(t, "s awake during the export", allIn(reported.InstanceRunning, "s"))
	if r := h.readReport(t); r.Exports[0].State != reported.ExportPreparing {
		t.Fatalf("the export is %s before it was let go", r.Exports[0].State)
	}

	close(held.release)
	r := h.waitFor(t, "e1 ready", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && r.Exports[0].State == reported.ExportReady
	})
	if r.Exports[0].SizeBytes != 42 || r.Exports[0].ReadyAt == nil {
		t.Errorf("ready export %+v", r.Exports[0])
	}
	if v.Frozen("a") || v.Freezes("a") != 1 {
		t.Errorf("after the export a is frozen=%v after %d freezes; want thawed after one", v.Frozen("a"), v.Freezes("a"))
	}
}

func TestAnExportDroppedFromTheDocumentWhileItIsWrittenIsCancelledAndForgotten(t *testing.T) {
	h := newHost(t)
	_, _, held := startHeld(t, h)
	dd := doc(h.app("a", "a1", withState(desired.StateStopped)))
	dd.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "a", VolumeId: "a-data", ObjectKey: "a.tar.gz", DesiredState: desired.Present}}
	h.write(t, dd)
	if vol := <-held.started; vol.Freezer != nil {
		t.Error("the export of a stopped app's volume asked for a freeze")
	}
	dd.Exports = []desired.DesiredExport{}
	h.write(t, dd)
	h.waitFor(t, "e1 gone from the report", func(r *reported.HostReportedState) bool { return len(r.Exports) == 0 })
	select {
	case err := <-held.ended:
		if err == nil {
			t.Error("the dropped export's write ended without its context ending")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the dropped export's write was not cancelled")
	}
}
