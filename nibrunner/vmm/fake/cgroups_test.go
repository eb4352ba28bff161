package fake

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/jail"
)

// A jailed VMM's Close leaves its guests' parent cgroup while they run;
// once a test's cleanup has killed them, KillAll removes their cgroups and
// the parent, so that no test run leaves empty nibrunner-* cgroups behind.
func TestKillAllRemovesTheCgroupsAJailedVMMLeft(t *testing.T) {
	testenv.RequireRoot(t)
	run := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := jail.Detect(jail.DefaultMount, jail.ParentFor(run))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Setup(jail.DefaultCPUWeight); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove("app"); _ = c.RemoveParent() })
	procs, err := c.Create("app", jail.Limits{CPUQuotaUs: 100000, CPUPeriodUs: 100000, MemoryMax: 64 << 20, PIDsMax: 16})
	if err != nil {
		t.Fatal(err)
	}
	guest := exec.Command("sleep", "600")
	if err := guest.Start(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if err := os.WriteFile(p, []byte(strconv.Itoa(guest.Process.Pid)), 0); err != nil {
			_ = guest.Process.Kill()
			t.Fatal(err)
		}
	}
	// The guest dies the way a test's guests do, after its VMM let go.
	_ = guest.Process.Kill()
	_ = guest.Wait()

	KillAll(run)
	if names := c.Names(); len(names) > 0 {
		t.Fatalf("guests' cgroups %v are left after KillAll", names)
	}
	if _, err := os.Stat(c.Dir("memory", "")); err == nil {
		t.Fatalf("the guests' parent cgroup %s is left after KillAll", c.Dir("memory", ""))
	}
}
