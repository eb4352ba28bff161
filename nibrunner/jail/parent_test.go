package jail

import (
	"fmt"
	"os"
	"testing"

	"alpnib.dev/internal/testenv"
)

// The guests' parent goes with the last guest, on this host's cgroups:
// while a guest's cgroup is in it, it stays and that is no error.
func TestTheParentCgroupIsRemovedOnlyOnceNoGuestIsInIt(t *testing.T) {
	testenv.RequireRoot(t)
	c, err := Detect(DefaultMount, fmt.Sprintf("nibrunner-test-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Setup(DefaultCPUWeight); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Remove("g"); _ = c.RemoveParent() })
	if _, err := c.Create("g", Limits{CPUQuotaUs: 100000, CPUPeriodUs: 100000, MemoryMax: 64 << 20, PIDsMax: 16}); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveParent(); err != nil {
		t.Fatalf("with a guest's cgroup in it: %v, want no error", err)
	}
	for _, ctl := range c.controllers() {
		if _, err := os.Stat(c.dir(ctl, "")); err != nil {
			t.Fatalf("the parent went while a guest's cgroup was in it: %v", err)
		}
	}
	if err := c.Remove("g"); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveParent(); err != nil {
		t.Fatal(err)
	}
	for _, ctl := range c.controllers() {
		if _, err := os.Stat(c.dir(ctl, "")); !os.IsNotExist(err) {
			t.Errorf("%s outlived the last guest (%v)", c.dir(ctl, ""), err)
		}
	}
}
