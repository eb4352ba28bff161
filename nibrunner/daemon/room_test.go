package daemon

import (
	"strings"
	"testing"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

// Short of memory, a start puts the longest-idle on-request app to sleep
// and goes ahead once its memory is free; the log says who slept for whom,
// and the report shows the memory given and held.
func TestAStartShortOfMemoryPutsTheLongestIdleOnRequestAppToSleepFirst(t *testing.T) {
	h := newHost(t)
	h.capacityMiB = 512
	h.start(t)
	old := h.app("old", "o1", withState(desired.StateOnRequest), withMemory(256))
	h.write(t, doc(old))
	h.waitFor(t, "old's first boot", allIn(reported.InstanceRunning, "old"))
	recent := h.app("recent", "r1", withState(desired.StateOnRequest), withMemory(256))
	h.write(t, doc(old, recent))
	r := h.waitFor(t, "recent's first boot", allIn(reported.InstanceRunning, "old", "recent"))
	if m := r.Memory; m == nil || m.GivenMib != 512 || m.HeldMib != 512 || m.CapacityMib != 512 || m.Overcommit != 1 {
		t.Fatalf("host memory with two 256 MiB guests up: %+v", m)
	}
	if m := instance(r, "old").Memory; m == nil || m.GivenMib != 256 || m.HeldMib != 256 {
		t.Fatalf("old's memory (the fake VMM measures no host share: held is given): %+v", m)
	}

	h.write(t, doc(old, recent, h.app("c", "c1", withMemory(256))))
	r = h.waitFor(t, "c running with old asleep", func(r *reported.HostReportedState) bool {
		c := instance(r, "c")
		return c != nil && c.State == reported.InstanceRunning
	})
	if o, n := instance(r, "old"), instance(r, "recent"); o.State != reported.InstanceIdle || n.State != reported.InstanceRunning {
		t.Fatalf("after c's start: old %s, recent %s; want the longest idle (old) asleep and recent running", o.State, n.State)
	}
	if o := instance(r, "old"); o.Memory != nil {
		t.Fatalf("old asleep still reports memory %+v", o.Memory)
	}
	if log := h.log.String(); !strings.Contains(log, "nibrunnerd: old goes to sleep to make room in memory for c") || strings.Contains(log, "recent goes to sleep") {
		t.Fatalf("the log does not say old alone went to sleep for c:\n%s", log)
	}
}
