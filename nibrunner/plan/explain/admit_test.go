package explain

import (
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/plan"
)

// The start gate's answers, in words (plan.Admit decides them).

func TestTheStartGate(t *testing.T) {
	in := desired.DesiredInstance{AppId: "a", DeploymentId: "d1", VolumeId: "vol-a", DesiredState: desired.StateRunning}
	in.Config.Resources.MemoryMib = 256
	open := plan.StartFacts{NetworkReady: true, VolumeReady: true, InUseMiB: 512, CapacityMiB: 1024, HasSlot: true}
	tests := []struct {
		name string
		edit func(*plan.StartFacts)
		need uint64
		why  string
	}{
		{"a start with every gate open is admitted with its memory", func(*plan.StartFacts) {}, 256, ""},
		{"a start that fills memory exactly is admitted", func(f *plan.StartFacts) { f.InUseMiB = 768 }, 256, ""},
		{"no start before the network rules are in place", func(f *plan.StartFacts) {
			f.NetworkReady, f.NetworkErr = false, "nft: table nibrun could not be loaded"
		}, 0,
			"waiting to be started: the host network rules are not in place yet (nft: table nibrun could not be loaded)"},
		{"no start before the volume is made", func(f *plan.StartFacts) { f.VolumeReady = false }, 0,
			"waiting to be started: its volume vol-a is not ready: it is not made yet"},
		{"a volume that failed says why", func(f *plan.StartFacts) { f.VolumeReady, f.VolumeErr = false, "could not be made: disk full" }, 0,
			"waiting to be started: its volume vol-a is not ready: could not be made: disk full"},
		{"a start that does not fit in memory says how much is missing", func(f *plan.StartFacts) { f.InUseMiB = 896 }, 0,
			"waiting to be started: its host is 128 MiB short of the memory it needs"},
		{"memory over capacity already misses the whole guest", func(f *plan.StartFacts) { f.InUseMiB = 2048 }, 0,
			"waiting to be started: its host is 256 MiB short of the memory it needs"},
		{"an app whose slot could not be given says why", func(f *plan.StartFacts) {
			f.HasSlot, f.NoSlot = false, "waiting to be started: every slot of this host is taken (max_apps = 1)"
		}, 0, "waiting to be started: every slot of this host is taken (max_apps = 1)"},
		{"an app without a slot waits for one", func(f *plan.StartFacts) { f.HasSlot = false }, 0, "waiting to be started: it has no slot yet"},
		{"the network is checked before memory", func(f *plan.StartFacts) { f.NetworkReady, f.InUseMiB = false, 4096 }, 0,
			"waiting to be started: the host network rules are not in place yet ()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := open
			tt.edit(&f)
			got := plan.Admit(&in, f)
			if got.NeedMiB != tt.need || Admission(got) != tt.why || got.Sleep != nil {
				t.Fatalf("got %+v; want %d, %q", got, tt.need, tt.why)
			}
		})
	}
}

// Overcommit lets given memory pass the capacity while what guests hold
// fits in it; short anyway, the longest idle guests on request that make
// room are put to sleep.
func TestTheStartGateUnderOvercommit(t *testing.T) {
	in := desired.DesiredInstance{AppId: "a", DeploymentId: "d1", VolumeId: "vol-a", DesiredState: desired.StateRunning}
	in.Config.Resources.MemoryMib = 256
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	idle := []plan.Sleeper{
		{AppID: "recent", IdleSince: t0.Add(time.Hour), GivenMiB: 256, HeldMiB: 100},
		{AppID: "oldest", IdleSince: t0, GivenMiB: 256, HeldMiB: 100},
		{AppID: "older", IdleSince: t0.Add(time.Minute), GivenMiB: 256, HeldMiB: 100},
	}
	base := plan.StartFacts{NetworkReady: true, VolumeReady: true, CapacityMiB: 1024, HasSlot: true, Overcommit: 2}
	tests := []struct {
		name        string
		given, held uint64
		ratio       float64
		sleepers    []plan.Sleeper
		need        uint64
		why         string
		sleep       []string
	}{
		{"given past the capacity, held within it: admitted", 1536, 400, 2, nil, 256, "", nil},
		{"given up to capacity times the ratio: admitted", 1792, 400, 2, nil, 256, "", nil},
		{"ratio 1 is the given rule alone, whatever is held", 768, 4096, 1, nil, 256, "", nil},
		{"ratio 1 refuses past the capacity as before", 1024, 0, 1, nil, 0, "waiting to be started: its host is 256 MiB short of the memory it needs", nil},
		{"a ratio below 1 counts as 1", 1024, 0, 0.5, nil, 0, "waiting to be started: its host is 256 MiB short of the memory it needs", nil},
		{"given past capacity times the ratio: refused", 2048, 400, 2, nil, 0, "waiting to be started: its host is 256 MiB short of the memory it needs", nil},
		{"held memory full: refused, saying what is held", 1024, 900, 2, nil, 0,
			"waiting to be started: the guests on its host hold 900 MiB of the 1024 MiB they may, 132 MiB short of the memory it needs", nil},
		{"held memory full: the longest idle are put to sleep until it fits", 1024, 900, 2, idle, 0,
			"waiting to be started: the guests on its host hold 900 MiB of the 1024 MiB they may, 132 MiB short of the memory it needs; putting the longest idle on request to sleep to make room: oldest, older",
			[]string{"oldest", "older"}},
		{"given memory short: one sleeper's given covers it", 1900, 400, 2, idle, 0,
			"waiting to be started: its host is 108 MiB short of the memory it needs; putting the longest idle on request to sleep to make room: oldest",
			[]string{"oldest"}},
		{"a guest already going to sleep makes the room: no other is put to sleep", 1024, 900, 2, idle, 0,
			"waiting to be started: the guests on its host hold 900 MiB of the 1024 MiB they may, 132 MiB short of the memory it needs; waiting for the guests going to sleep or down to make room", nil},
		{"sleeping every idle guest would not make room: none is put to sleep", 1024, 1400, 2, idle, 0,
			"waiting to be started: the guests on its host hold 1400 MiB of the 1024 MiB they may, 256 MiB short of the memory it needs", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base
			f.InUseMiB, f.HeldMiB, f.Overcommit, f.Sleepers = tt.given, tt.held, tt.ratio, tt.sleepers
			if strings.HasPrefix(tt.name, "a guest already going to sleep") {
				f.FreeingGivenMiB, f.FreeingHeldMiB = 256, 150
			}
			got := plan.Admit(&in, f)
			if got.NeedMiB != tt.need || Admission(got) != tt.why || !slices.Equal(got.Sleep, tt.sleep) {
				t.Fatalf("got %+v\nwant %d, %q, %v", got, tt.need, tt.why, tt.sleep)
			}
		})
	}
}
