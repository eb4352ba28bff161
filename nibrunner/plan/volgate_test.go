package plan

import (
	"reflect"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
)

func free(n uint64) *uint64 { return &n }

func TestAFailedVolumeActionWaitsForItsBackoff(t *testing.T) {
	seeded := volume("a", 4096, desired.Present)
	seeded.InitialContents = &desired.InitialContents{Digest: "aa", ObjectKey: "seed.tar", DestinationPath: "/data"}
	failed := func(n int, ago time.Duration) map[string]VolumeFailure {
		return map[string]VolumeFailure{"vol-a": {Kind: Provision, SizeBytes: 4096, Seed: "aa", Count: n, At: t0.Add(-ago)}}
	}
	tests := []struct {
		name      string
		vol       desired.DesiredVolume
		have      *Volume
		failures  map[string]VolumeFailure
		wantKind  VolumeKind
		wantRetry time.Time
	}{
		{"a first attempt runs", seeded, nil, nil, Provision, time.Time{}},
		{"a failure waits 2 s", seeded, nil, failed(1, time.Second), RetryLater, t0.Add(time.Second)},
		{"after 2 s it is tried again", seeded, nil, failed(1, 2*time.Second), Provision, time.Time{}},
		{"the wait doubles with each failure", seeded, nil, failed(3, 7*time.Second), RetryLater, t0.Add(time.Second)},
		{"and stops at 5 minutes", seeded, nil, failed(30, 4*time.Minute), RetryLater, t0.Add(time.Minute)},
		{"another seed is another attempt", func() desired.DesiredVolume {
			v := seeded
			v.InitialContents = &desired.InitialContents{Digest: "bb", ObjectKey: "seed2.tar", DestinationPath: "/data"}
			return v
		}(), nil, failed(3, time.Second), Provision, time.Time{}},
		{"another size is another attempt", volume("a", 8192, desired.Present), nil, failed(3, time.Second), Provision, time.Time{}},
		{"a failed grow waits too", volume("a", 8192, desired.Present), &Volume{SizeBytes: 4096},
			map[string]VolumeFailure{"vol-a": {Kind: Grow, SizeBytes: 8192, Count: 1, At: t0}}, RetryLater, t0.Add(2 * time.Second)},
		{"a failed teardown waits too", volume("a", 4096, desired.Absent), &Volume{SizeBytes: 4096},
			map[string]VolumeFailure{"vol-a": {Kind: Teardown, Count: 2, At: t0}}, RetryLater, t0.Add(4 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &desired.HostDesiredState{Volumes: []desired.DesiredVolume{tt.vol}}
			obs := Observed{Now: t0, Volumes: map[string]Volume{}, VolumeFailures: tt.failures}
			if tt.have != nil {
				obs.Volumes["vol-a"] = *tt.have
			}
			got := Plan(d, obs)
			if len(got.Volumes) != 1 || got.Volumes[0].Kind != tt.wantKind {
				t.Fatalf("volumes %+v, want one %s", got.Volumes, tt.wantKind)
			}
			if !got.RetryAt.Equal(tt.wantRetry) || !got.Volumes[0].RetryAt.Equal(tt.wantRetry) {
				t.Fatalf("retry at %v (action %v), want %v", got.RetryAt, got.Volumes[0].RetryAt, tt.wantRetry)
			}
		})
	}
}

func TestVolumesAreAdmittedAgainstTheRoomOnTheDisk(t *testing.T) {
	const mib = 1 << 20
	vols := func(ids ...string) []desired.DesiredVolume {
		var out []desired.DesiredVolume
		for _, id := range ids {
			out = append(out, volume(id, 16*mib, desired.Present))
		}
		return out
	}
	tests := []struct {
		name string
		want []desired.DesiredVolume
		have map[string]Volume
		free *uint64
		kind map[string]VolumeKind
	}{
		{"unknown free space admits everything", vols("a", "b"), nil, nil, map[string]VolumeKind{"vol-a": Provision, "vol-b": Provision}},
		{"room for one: the first by id is made", vols("a", "b"), nil, free(20 * mib), map[string]VolumeKind{"vol-a": Provision, "vol-b": NoDisk}},
		{"room for both", vols("a", "b"), nil, free(32 * mib), map[string]VolumeKind{"vol-a": Provision, "vol-b": Provision}},
		{"what a volume made may still fill is not room", vols("a", "b"),
			map[string]Volume{"vol-a": {SizeBytes: 16 * mib, AllocatedBytes: 1 * mib}}, free(30 * mib),
			map[string]VolumeKind{"vol-b": NoDisk}},
		{"a full volume leaves the free space as it is", vols("a", "b"),
			map[string]Volume{"vol-a": {SizeBytes: 16 * mib, AllocatedBytes: 16 * mib}}, free(16 * mib),
			map[string]VolumeKind{"vol-b": Provision}},
		{"a grow needs only what it adds", []desired.DesiredVolume{volume("a", 32*mib, desired.Present)},
			map[string]Volume{"vol-a": {SizeBytes: 16 * mib, AllocatedBytes: 16 * mib}}, free(16 * mib),
			map[string]VolumeKind{"vol-a": Grow}},
		{"a grow with no room is held back", []desired.DesiredVolume{volume("a", 32*mib, desired.Present)},
			map[string]Volume{"vol-a": {SizeBytes: 16 * mib, AllocatedBytes: 16 * mib}}, free(8 * mib),
			map[string]VolumeKind{"vol-a": NoDisk}},
		{"a teardown needs no room", []desired.DesiredVolume{volume("a", 16*mib, desired.Absent)},
			map[string]Volume{"vol-a": {SizeBytes: 16 * mib}}, free(0),
			map[string]VolumeKind{"vol-a": Teardown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := Observed{Now: t0, Volumes: tt.have, DiskFree: tt.free}
			if obs.Volumes == nil {
				obs.Volumes = map[string]Volume{}
			}
			got := map[string]VolumeKind{}
			for _, a := range Plan(&desired.HostDesiredState{Volumes: tt.want}, obs).Volumes {
				got[a.VolumeID] = a.Kind
			}
			if !reflect.DeepEqual(got, tt.kind) {
				t.Fatalf("got %v, want %v", got, tt.kind)
			}
		})
	}
}

// A NoDisk carries what its sentence names (plan/explain's
// TestANoDiskSentenceNamesTheVolumeItsSizeAndTheFreeSpace words it).
func TestANoDiskNamesTheVolumeItsSizeAndTheFreeSpace(t *testing.T) {
	obs := Observed{Now: t0, Volumes: map[string]Volume{}, DiskFree: free(10 << 20)}
	acts := Plan(&desired.HostDesiredState{Volumes: []desired.DesiredVolume{volume("a", 16<<20, desired.Present)}}, obs).Volumes
	if len(acts) != 1 || acts[0].Kind != NoDisk {
		t.Fatalf("volumes %+v", acts)
	}
	if a := acts[0]; a.VolumeID != "vol-a" || a.SizeBytes != 16<<20 || a.RoomBytes != 10<<20 || a.Tried != Provision {
		t.Errorf("the NoDisk %+v; want vol-a, 16 MiB asked, 10 MiB free, a provision tried", a)
	}
}

func TestTheMakingOfAVolumeIsGivenUpWhenTheDocumentNoLongerAsksIt(t *testing.T) {
	seeded := volume("a", 4096, desired.Present)
	seeded.InitialContents = &desired.InitialContents{Digest: "aa", ObjectKey: "seed.tar", DestinationPath: "/data"}
	with := func(v desired.DesiredVolume) *desired.HostDesiredState {
		return &desired.HostDesiredState{HostId: "h", Volumes: []desired.DesiredVolume{volume("b", 4096, desired.Present), v}}
	}
	other := func(c desired.InitialContents) desired.DesiredVolume {
		v := seeded
		v.InitialContents = &c
		return v
	}
	bigger := seeded
	bigger.SizeBytes = 8192
	absent := seeded
	absent.DesiredState = desired.Absent
	plain := seeded
	plain.InitialContents = nil
	tests := []struct {
		name string
		doc  *desired.HostDesiredState
		want bool
	}{
		{"still asked as planned", with(seeded), false},
		{"asked bigger", with(bigger), false},
		{"no document in force", nil, false},
		{"no longer named", &desired.HostDesiredState{HostId: "h", Volumes: []desired.DesiredVolume{volume("b", 4096, desired.Present)}}, true},
		{"asked absent", with(absent), true},
		{"asked from another archive", with(other(desired.InitialContents{Digest: "bb", ObjectKey: "seed.tar", DestinationPath: "/data"})), true},
		{"asked unpacked elsewhere", with(other(desired.InitialContents{Digest: "aa", ObjectKey: "seed.tar", DestinationPath: "/srv"})), true},
		{"asked empty", with(plain), true},
	}
	for _, tc := range tests {
		if got := GiveUpMaking(tc.doc, seeded); got != tc.want {
			t.Errorf("%s: GiveUpMaking = %v, want %v", tc.name, got, tc.want)
		}
	}
	if GiveUpMaking(with(plain), plain) {
		t.Error("the making of an empty volume still asked empty is given up")
	}
}
