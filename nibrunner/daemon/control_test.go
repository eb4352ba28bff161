package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestAnOnRequestAppSleepsWhenAskedBeforeItsIdleTimeoutAndWakesRestored(t *testing.T) {
	h := newHost(t)
	d, v, _ := h.start(t)
	app := h.app("a", "a1", withState(desired.StateOnRequest))
	h.write(t, doc(app))
	booted := instance(h.waitFor(t, "a's first boot", allIn(reported.InstanceRunning, "a")), "a")

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := d.Sleep(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a asleep", allIn(reported.InstanceIdle, "a"))
	if _, up := pids(t, v)["a"]; up {
		t.Fatal("a sleeping app has a guest")
	}
	if _, err := os.Stat(filepath.Join(h.dir, "snap", "a", "stamp.json")); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	if err := d.Sleep(ctx, "a"); err != nil {
		t.Fatalf("asking a sleeping app to sleep again: %v", err)
	}

	if err := d.Wake(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	r := h.waitFor(t, "a awake", allIn(reported.InstanceRunning, "a"))
	// The first boot may have spent a restart on a loaded machine (a guest
	// slower than its grace period); the sleep and the wake spend none.
	if a := instance(r, "a"); a.RestartCount != booted.RestartCount {
		t.Fatalf("a sleep and wake spent the restart budget: restartCount %d after the first boot, %d after the wake (%+v)", booted.RestartCount, a.RestartCount, a)
	}
	// Restored, not booted cold: the report would say the snapshot was
	// dropped.
	if a := instance(r, "a"); a.Message != "" {
		t.Fatalf("a woke saying %q; it should have been restored from its snapshot", a.Message)
	}
}

func TestOnlyAnUpOnRequestAppCanBePutToSleep(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	h.write(t, doc(h.app("always", "al1")))
	h.waitFor(t, "always running", allIn(reported.InstanceRunning, "always"))

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, app := range []string{"always", "nobody"} {
		if err := d.Sleep(ctx, app); !errors.Is(err, ErrCannotSleep) {
			t.Errorf("sleep %s: %v, want ErrCannotSleep", app, err)
		}
	}
	r := h.waitFor(t, "always still running", allIn(reported.InstanceRunning, "always"))
	if got := instance(r, "always"); got.RestartCount != 0 {
		t.Fatalf("a refused sleep restarted the app: %+v", got)
	}
}
