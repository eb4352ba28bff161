package daemon

import (
	"context"
	"sync"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

// slowStartVMM holds every Start until release is closed, as a microVM's
// first boot takes seconds.
type slowStartVMM struct {
	*fake.VMM
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (v *slowStartVMM) Start(ctx context.Context, spec vmm.Spec) (vmm.Status, error) {
	v.once.Do(func() { close(v.entered) })
	select {
	case <-v.release:
	case <-ctx.Done():
		return vmm.Status{}, ctx.Err()
	}
	return v.VMM.Start(ctx, spec)
}

// A request that arrives while an app's first boot is under way waits for
// it, as one to a sleeping app does, rather than being told "This app is
// not running." a moment before it is (issue 39's first hour: a newcomer's
// first curl met a 503).
func TestARequestDuringAnAppsFirstBootWaitsForItRatherThanAnsweringNotRunning(t *testing.T) {
	h := newHost(t)
	deps, fv, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	sv := &slowStartVMM{VMM: fv, entered: make(chan struct{}), release: make(chan struct{})}
	deps.VMM = sv
	d, _ := h.run(t, deps)
	h.write(t, doc(h.app("a", "a1", withState(desired.StateRunning))))
	<-sv.entered
	h.deadlineWait(t, func() bool { return routeState(d, "a.apps.example.net") != "" })
	if s := routeState(d, "a.apps.example.net"); s != route.Sleeping {
		t.Fatalf("during the first boot the route says %q; want %q, so the request waits on a wake", s, route.Sleeping)
	}
	woke := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		woke <- d.Wake(ctx, "a")
	}()
	close(sv.release)
	if err := <-woke; err != nil {
		t.Fatalf("the request's wake during the first boot answered %v; want the app once healthy", err)
	}
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
}
