package plan

import (
	"testing"

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
			need, why := Admit(&in, f)
			if need != tt.need || why != tt.why {
				t.Fatalf("got %d, %q; want %d, %q", need, why, tt.need, tt.why)
			}
		})
	}
}
