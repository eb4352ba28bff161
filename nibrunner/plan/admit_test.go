package plan

import (
	"slices"
	"testing"
	"time"
)

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
}
