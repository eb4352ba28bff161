package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/vmm"
	"alpnib.dev/nibrunner/vmm/fake"
)

// startProcess runs the daemon as a child process (this test binary again).
func (h *host) startProcess(t *testing.T, slowLayersMs int) *exec.Cmd {
	t.Helper()
	return startSelf(t, "^$", "NIBRUN_TEST_DAEMON_DIR="+h.dir, fmt.Sprintf("NIBRUN_TEST_SLOW_LAYERS_MS=%d", slowLayersMs))
}

// startSelf starts this test binary again as a child process, running the
// tests that match run with env added to ours; it is killed when the test
// ends.
func startSelf(t *testing.T, run string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run="+run)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func guestPIDs(t *testing.T, h *host) map[string]int {
	t.Helper()
	pfs, err := vmm.ReadPidfiles(h.runDir())
	if err != nil {
		t.Fatal(err)
	}
	boot, _ := vmm.BootID()
	out := map[string]int{}
	for _, p := range pfs {
		if p.Alive(boot) {
			out[p.AppID] = p.PID
		}
	}
	return out
}

func TestADaemonKilledMidPassIsRestartedAdoptsItsGuestsAndConverges(t *testing.T) {
	h := newHost(t)
	apps := []desired.DesiredInstance{h.app("a", "a1"), h.app("b", "b1"), h.app("c", "c1")}
	h.write(t, doc(apps...))
	// Each start takes 300 ms here, so a pass starting five apps lasts
	// long enough to be killed in the middle.
	d1 := h.startProcess(t, 300)
	h.waitFor(t, "a, b and c running", allIn(reported.InstanceRunning, "a", "b", "c"))
	before := guestPIDs(t, h)

	more := append(apps, h.app("d", "d1"), h.app("e", "e1"), h.app("f", "f1"), h.app("g", "g1"), h.app("h", "h1"))
	h.write(t, doc(more...))
	// Kill it once some, but not all, of the new guests are up.
	if !h.until(t, time.Minute, func() bool { return len(guestPIDs(t, h)) >= 5 }) {
		t.Fatal("the new guests never started")
	}
	if err := d1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d1.Wait()
	atKill := guestPIDs(t, h)
	if len(atKill) == len(more) {
		t.Fatal("the pass finished before the kill; the test proves nothing")
	}
	if r := h.readReport(t); r != nil && instance(r, "h") != nil && instance(r, "h").State == reported.InstanceRunning {
		t.Fatal("the report already showed the whole pass")
	}

	h.startProcess(t, 0)
	r := h.waitFor(t, "all eight running", allIn(reported.InstanceRunning, "a", "b", "c", "d", "e", "f", "g", "h"))
	after := guestPIDs(t, h)
	if len(after) != len(more) {
		t.Fatalf("%d guests for %d apps: %v", len(after), len(more), after)
	}
	// No guest outlives the kill unnamed: one the first daemon started
	// before writing its pidfile was ended by the second.
	for pid, app := range fake.Processes(h.runDir()) {
		if after[app] != pid {
			t.Fatalf("guest process %d of %s runs, but %s's pidfile names %d", pid, app, app, after[app])
		}
	}
	for app, pid := range atKill {
		if after[app] != pid {
			t.Fatalf("%s was restarted instead of adopted: pid %d → %d", app, pid, after[app])
		}
	}
	for app, pid := range before {
		if after[app] != pid {
			t.Fatalf("%s changed pid across the kill", app)
		}
	}
	for _, in := range r.Instances {
		if in.RestartCount != 0 {
			t.Fatalf("%s counted a restart: %+v", in.AppId, in)
		}
	}
}
