package plan

import (
	"fmt"
	"testing"
	"time"
)

func TestOnlyAnUpIdleOnRequestAppWithNothingInFlightMaySleepForRoom(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	ok := SleepFacts{AppID: "a", OnRequest: true, Up: true, Recorded: true, IdleSince: t0, GivenMiB: 256, HeldMiB: 100}
	tests := []struct {
		name     string
		change   func(*SleepFacts)
		starting string
		want     bool
	}{
		{"an up, idle on-request app may", func(*SleepFacts) {}, "b", true},
		{"not the app starting", func(*SleepFacts) {}, "a", false},
		{"not an app asked running", func(f *SleepFacts) { f.OnRequest = false }, "b", false},
		{"not one whose guest is down", func(f *SleepFacts) { f.Up = false }, "b", false},
		{"not one the daemon has no record of", func(f *SleepFacts) { f.Recorded = false }, "b", false},
		{"not one whose worker is at it", func(f *SleepFacts) { f.Busy = true }, "b", false},
		{"not one a request waits for", func(f *SleepFacts) { f.WantAwake = true }, "b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ok
			tt.change(&f)
			got := Sleepers([]SleepFacts{f}, tt.starting)
			if (len(got) == 1) != tt.want {
				t.Fatalf("Sleepers = %+v, want it listed: %v", got, tt.want)
			}
			if tt.want && got[0] != (Sleeper{AppID: "a", IdleSince: t0, GivenMiB: 256, HeldMiB: 100}) {
				t.Fatalf("Sleepers = %+v", got)
			}
		})
	}
}

func TestSleepsGoLongestIdleFirstThenByAppID(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		idle map[string]time.Time
		in   []string
		want []string
	}{
		{"the longest idle first", map[string]time.Time{"a": t0.Add(2 * time.Minute), "b": t0, "c": t0.Add(time.Minute)}, []string{"a", "b", "c"}, []string{"b", "c", "a"}},
		{"alike: by app id", map[string]time.Time{"a": t0, "b": t0, "c": t0}, []string{"c", "a", "b"}, []string{"a", "b", "c"}},
		{"never active counts as idle longest", map[string]time.Time{"a": t0}, []string{"a", "z"}, []string{"z", "a"}},
		{"none", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var xs []InstanceAction
			for _, a := range tt.in {
				xs = append(xs, InstanceAction{Kind: Sleep, AppID: a})
			}
			var got []string
			for _, x := range SleepOrder(xs, tt.idle) {
				got = append(got, x.AppID)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("SleepOrder = %v, want %v", got, tt.want)
			}
		})
	}
}
