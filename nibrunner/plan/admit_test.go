package plan

import (
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
)

func TestTheStartGate(t *testing.T) {
	in := instance("a", "d1", desired.StateRunning)
	in.Config.Resources.MemoryMib = 256
	open := StartFacts{NetworkReady: true, VolumeReady: true, InUseMiB: 512, CapacityMiB: 1024, HasSlot: true}
	tests := []struct {
		name string
		edit func(*StartFacts)
		need uint64
		why  string
	}{
		{"a start with every gate open is admitted with its memory", func(*StartFacts) {}, 256, ""},
		{"a start that fills memory exactly is admitted", func(f *StartFacts) { f.InUseMiB = 768 }, 256, ""},
		{"no start before the network rules are in place", func(f *StartFacts) { f.NetworkReady, f.NetworkErr = false, "nft: table nibrun could not be loaded" }, 0,
			"waiting to be started: the host network rules are not in place yet (nft: table nibrun could not be loaded)"},
		{"no start before the volume is made", func(f *StartFacts) { f.VolumeReady = false }, 0,
			"waiting to be started: its volume vol-a is not ready: it is not made yet"},
		{"a volume that failed says why", func(f *StartFacts) { f.VolumeReady, f.VolumeErr = false, "could not be made: disk full" }, 0,
			"waiting to be started: its volume vol-a is not ready: could not be made: disk full"},
		{"a start that does not fit in memory says how much is missing", func(f *StartFacts) { f.InUseMiB = 896 }, 0,
			"waiting to be started: its host is 128 MiB short of the memory it needs"},
		{"memory over capacity already misses the whole guest", func(f *StartFacts) { f.InUseMiB = 2048 }, 0,
			"waiting to be started: its host is 256 MiB short of the memory it needs"},
		{"an app whose slot could not be given says why", func(f *StartFacts) {
			f.HasSlot, f.NoSlot = false, "waiting to be started: every slot of this host is taken (max_apps = 1)"
		}, 0, "waiting to be started: every slot of this host is taken (max_apps = 1)"},
		{"an app without a slot waits for one", func(f *StartFacts) { f.HasSlot = false }, 0, "waiting to be started: it has no slot yet"},
		{"the network is checked before memory", func(f *StartFacts) { f.NetworkReady, f.InUseMiB = false, 4096 }, 0,
			"waiting to be started: the host network rules are not in place yet ()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := open
			tt.edit(&f)
			got := Admit(&in, f)
			if got.NeedMiB != tt.need || got.Why != tt.why || got.Sleep != nil {
				t.Fatalf("got %+v; want %d, %q", got, tt.need, tt.why)
			}
		})
	}
}

// Overcommit lets given memory pass the capacity while what guests hold
// fits in it; short anyway, the longest idle guests on request that make
// room are put to sleep.
func TestTheStartGateUnderOvercommit(t *testing.T) {
	in := instance("a", "d1", desired.StateRunning)
	in.Config.Resources.MemoryMib = 256
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	idle := []Sleeper{
		{AppID: "recent", IdleSince: t0.Add(time.Hour), GivenMiB: 256, HeldMiB: 100},
		{AppID: "oldest", IdleSince: t0, GivenMiB: 256, HeldMiB: 100},
		{AppID: "older", IdleSince: t0.Add(time.Minute), GivenMiB: 256, HeldMiB: 100},
	}
	base := StartFacts{NetworkReady: true, VolumeReady: true, CapacityMiB: 1024, HasSlot: true, Overcommit: 2}
	tests := []struct {
		name        string
		given, held uint64
		ratio       float64
		sleepers    []Sleeper
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
			got := Admit(&in, f)
			if got.NeedMiB != tt.need || got.Why != tt.why || !slices.Equal(got.Sleep, tt.sleep) {
				t.Fatalf("got %+v\nwant %d, %q, %v", got, tt.need, tt.why, tt.sleep)
			}
		})
	}
}

func TestMakeRoomPicksTheLongestIdleFirstAndNoneInVain(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := []Sleeper{
		{AppID: "b", IdleSince: t0, GivenMiB: 128, HeldMiB: 40},
		{AppID: "c", IdleSince: t0.Add(time.Second), GivenMiB: 512, HeldMiB: 300},
		{AppID: "a", IdleSince: t0, GivenMiB: 128, HeldMiB: 40},
	}
	for _, tt := range []struct {
		given, held uint64
		want        []string
	}{
		{0, 0, nil},
		{100, 0, []string{"a"}},       // ties go by name
		{0, 60, []string{"a", "b"}},   // held decides
		{200, 30, []string{"a", "b"}}, // both
		{0, 380, []string{"a", "b", "c"}},
		{0, 381, nil}, // all would not do
		{1000, 0, nil},
	} {
		if got := MakeRoom(tt.given, tt.held, s); !slices.Equal(got, tt.want) {
			t.Errorf("MakeRoom(%d, %d) = %v, want %v", tt.given, tt.held, got, tt.want)
		}
	}
}

func TestTheShortfallIsWhatAStartMissesOfTheCapacity(t *testing.T) {
	for _, tt := range []struct{ capacity, inUse, need, want uint64 }{
		{1024, 512, 512, 0},
		{1024, 768, 512, 256},
		{1024, 2048, 512, 512},
	} {
		if got := shortfall(tt.capacity, tt.inUse, tt.need); got != tt.want {
			t.Errorf("shortfall(%d, %d, %d) = %d, want %d", tt.capacity, tt.inUse, tt.need, got, tt.want)
		}
	}
	if got := memoryWaitingMessage(256); got != "waiting to be started: its host is 256 MiB short of the memory it needs" {
		t.Fatal(got)
	}
}
