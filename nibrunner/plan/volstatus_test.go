package plan

import (
	"maps"
	"reflect"
	"strings"
	"testing"
	"time"

	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/reported"
)

func TestVolumeStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	present := desired.DesiredVolume{VolumeId: "v", AppId: "a", SizeBytes: 1000, DesiredState: desired.Present}
	absent := present
	absent.DesiredState = desired.Absent
	seeding := VolumeWork{Kind: Provision, SizeBytes: 1024, Since: now.Add(-90 * time.Second), Seeding: true, ObjectKey: "seeds/big.tar.gz"}
	at := func(w VolumeWork, ph SeedPhase, fetched, total, unpacked int64, e *EarlierSeed) VolumeWork {
		w.Phase, w.Fetched, w.Total, w.Unpacked, w.Earlier = ph, fetched, total, unpacked, e
		return w
	}
	earlier := now.Add(-time.Hour)
	for _, c := range []struct {
		name  string
		v     desired.DesiredVolume
		f     VolumeFacts
		state reported.VolumeState
		size  uint64
		says  []string // "" alone: no message
	}{
		{"on the host", present, VolumeFacts{Listed: true, SizeBytes: 4096, DevicePath: "/v.img", Usage: &reported.Usage{TotalBytes: 4000, UsedBytes: 10}}, reported.VolumeReady, 4096, []string{""}},
		{"gone from the host, its fill with it", present, VolumeFacts{Usage: &reported.Usage{TotalBytes: 4000}}, reported.VolumePending, 1024, []string{""}},
		{"on the host, its shrink refused", present, VolumeFacts{Listed: true, SizeBytes: 4096, Message: "a volume only grows"}, reported.VolumeFailed, 4096, []string{"a volume only grows"}},
		{"on the host, absent held back", absent, VolumeFacts{Listed: true, SizeBytes: 4096, Message: "held back"}, reported.VolumeReady, 4096, []string{"held back"}},
		{"being grown", present, VolumeFacts{Listed: true, SizeBytes: 4096, Message: "old", Work: VolumeWork{Kind: Grow, SizeBytes: 8192, Since: now.Add(-3 * time.Second)}}, reported.VolumeReady, 4096,
			[]string{"being grown to 8192 bytes (for 3s): its guests are down"}},
		{"being deleted", absent, VolumeFacts{Listed: true, SizeBytes: 4096, Work: VolumeWork{Kind: Teardown, Since: now}}, reported.VolumeReady, 4096, []string{"being deleted"}},
		{"asked absent, deleted here", absent, VolumeFacts{Deleted: true, DeletedSizeBytes: 4096}, reported.VolumeDeleted, 4096, []string{""}},
		{"asked absent, never here", absent, VolumeFacts{}, reported.VolumeDeleted, 1024, []string{""}},
		{"being made, waiting for a turn", present, VolumeFacts{Work: at(seeding, SeedQueued, 0, 0, 0, nil)}, reported.VolumePending, 1024,
			[]string{"being made (for 1m30s): waiting for a turn"}},
		{"being made without a seed", present, VolumeFacts{Work: VolumeWork{Kind: Provision, Since: now, Phase: SeedFetching}}, reported.VolumePending, 1024, []string{"being made (for 0s)"}},
		{"fetching", present, VolumeFacts{Message: "could not be made (tried again at …): boom", Work: at(seeding, SeedFetching, 3<<20, 12<<20, 0, nil)}, reported.VolumePending, 1024,
			[]string{`being made from initialContents "seeds/big.tar.gz" (for 1m30s): fetching the archive, 3145728 bytes (3.0 MiB) of 12582912 bytes (12.0 MiB) (25%)`}},
		{"fetching, size not yet known", present, VolumeFacts{Work: at(seeding, SeedFetching, 100, 0, 0, nil)}, reported.VolumePending, 1024, []string{"100 bytes so far"}},
		{"unpacking", present, VolumeFacts{Work: at(seeding, SeedUnpacking, 12<<20, 12<<20, 5<<20, nil)}, reported.VolumePending, 1024,
			[]string{"unpacking the archive (12582912 bytes (12.0 MiB) fetched), 5242880 bytes (5.0 MiB) of files unpacked"}},
		{"formatting", present, VolumeFacts{Work: at(seeding, SeedFormatting, 12<<20, 12<<20, 11<<20, nil)}, reported.VolumePending, 1024, []string{"writing the filesystem"}},
		{"resumed after a restart", present, VolumeFacts{Work: at(seeding, SeedUnpacking, 12<<20, 12<<20, 0, &EarlierSeed{StartedAt: earlier, Fetched: 12 << 20, Resumed: true})}, reported.VolumePending, 1024,
			[]string{"resumed: an attempt begun at 2026-12-02T05:00:00Z was interrupted by a restart after fetching the whole archive", "without fetching it again"}},
		{"restarted after a restart", present, VolumeFacts{Work: at(seeding, SeedFetching, 1, 12<<20, 0, &EarlierSeed{StartedAt: earlier, Fetched: 6 << 20})}, reported.VolumePending, 1024,
			[]string{"restarted: an attempt begun at 2026-12-02T05:00:00Z was interrupted by a restart after fetching 6291456 bytes (6.0 MiB)", "fetched again from the start"}},
		{"its making failed", present, VolumeFacts{Message: "could not be made: boom"}, reported.VolumeFailed, 1024, []string{"could not be made: boom"}},
		{"not made yet", present, VolumeFacts{}, reported.VolumePending, 1024, []string{""}},
	} {
		got := VolumeStatus(c.v, c.f, now)
		if got.State != c.state || got.SizeBytes != c.size || got.VolumeId != "v" || got.AppId != "a" {
			t.Errorf("%s: %+v; want %s at %d bytes", c.name, got, c.state, c.size)
		}
		for _, s := range c.says {
			if s == "" && got.Message != "" || !strings.Contains(got.Message, s) {
				t.Errorf("%s: message %q; want it to say %q", c.name, got.Message, s)
			}
		}
		if c.f.Listed && (got.DevicePath != c.f.DevicePath || got.Usage != c.f.Usage) || !c.f.Listed && got.Usage != nil {
			t.Errorf("%s: device %q, usage %+v", c.name, got.DevicePath, got.Usage)
		}
	}
}

func TestUnlistedVolumes(t *testing.T) {
	doc := &desired.HostDesiredState{Volumes: []desired.DesiredVolume{{VolumeId: "named"}}}
	facts := map[string]VolumeFacts{
		"named":    {Listed: true, SizeBytes: 1},
		"detached": {Listed: true, SizeBytes: 2, DevicePath: "/d.img"},
		"deleted":  {Deleted: true, DeletedSizeBytes: 3, DeletedApp: "x"},
		"both":     {Listed: true, SizeBytes: 4, Deleted: true, DeletedSizeBytes: 5},
		"nothing":  {},
	}
	got := UnlistedVolumes(doc, maps.All(facts), func(id string) string { return "app-of-" + id })
	want := []reported.Volume{
		{VolumeId: "both", AppId: "app-of-both", State: reported.VolumeDetached, SizeBytes: 4, Message: msgVolumeDetached},
		{VolumeId: "deleted", AppId: "x", State: reported.VolumeDeleted, SizeBytes: 3},
		{VolumeId: "detached", AppId: "app-of-detached", State: reported.VolumeDetached, SizeBytes: 2, DevicePath: "/d.img", Message: msgVolumeDetached},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

func TestGrowTakesDown(t *testing.T) {
	for _, c := range []struct {
		name string
		in   map[string]Instance
		want []string
	}{
		{"every guest up on the volume, in order", map[string]Instance{"b": {VolumeID: "v", VM: Up}, "a": {VolumeID: "v", VM: Up}}, []string{"a", "b"}},
		{"not a guest on another volume", map[string]Instance{"a": {VolumeID: "w", VM: Up}}, nil},
		{"not a guest down or exited", map[string]Instance{"a": {VolumeID: "v"}, "b": {VolumeID: "v", VM: Exited}}, nil},
		{"not one whose worker is at it", map[string]Instance{"a": {VolumeID: "v", VM: Up, Acting: true}}, nil},
	} {
		if got := GrowTakesDown("v", c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestVolumeHoldsBack(t *testing.T) {
	now := time.Now()
	if got := VolumeHoldsBack(VolumeWork{}, now); got != "" {
		t.Errorf("no work holds back: %q", got)
	}
	if got := VolumeHoldsBack(VolumeWork{Kind: Grow, SizeBytes: 2048, Since: now}, now); !strings.HasPrefix(got, "being grown to 2048 bytes") {
		t.Errorf("a grow holds back with %q", got)
	}
}

// missingDoc lists one volume present and one absent.
var missingDoc = &desired.HostDesiredState{Volumes: []desired.DesiredVolume{
	{VolumeId: "coming", AppId: "a", DesiredState: desired.Present},
	{VolumeId: "going", AppId: "b", DesiredState: desired.Absent},
}}

func TestCheckpointStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	ready := now.Add(-time.Minute)
	there := VolumeOf{There: true}
	failedJob := JobFacts{Failed: true, Attempts: 2, RetryAt: now.Add(4 * time.Second), Message: "freeze: boom"}
	for _, c := range []struct {
		name  string
		vol   string
		f     CheckpointFacts
		state reported.CheckpointState
		says  string
	}{
		{"made", "coming", CheckpointFacts{Exists: true, Reference: "checkpoints/c.img", ReadyAt: ready, Create: failedJob}, reported.CheckpointReady, ""},
		{"its job failed", "coming", CheckpointFacts{Create: failedJob, Volume: there}, reported.CheckpointFailed, "could not be made (attempt 2; the next try is in 4s): freeze: boom"},
		{"its job runs", "coming", CheckpointFacts{Create: JobFacts{Running: true}, Volume: there}, reported.CheckpointPending, ""},
		{"its volume to be made", "coming", CheckpointFacts{}, reported.CheckpointPending, "waiting for volume coming to be made (volumes[0])"},
		{"its volume's making failed", "coming", CheckpointFacts{Volume: VolumeOf{Failure: "disk full"}}, reported.CheckpointPending, "waiting for volume coming to be made (volumes[0]), which failed: disk full"},
		{"its volume asked absent", "going", CheckpointFacts{}, reported.CheckpointFailed, "volume going is asked absent (volumes[1].desiredState), so there is nothing to checkpoint"},
		{"its volume deleted and unlisted", "gone", CheckpointFacts{Volume: VolumeOf{Deleted: true}}, reported.CheckpointFailed, "volume gone was deleted from this host"},
		{"its volume never heard of", "ghost", CheckpointFacts{}, reported.CheckpointFailed, "add it to volumes, or point this checkpoint at a volume the host holds"},
	} {
		cp := desired.DesiredCheckpoint{CheckpointId: "c", VolumeId: desired.VolumeId(c.vol), DesiredState: desired.Present}
		got := CheckpointStatus(missingDoc, cp, c.f, now)
		if got.State != c.state || got.CheckpointId != "c" || string(got.VolumeId) != c.vol {
			t.Errorf("%s: %+v; want %s", c.name, got, c.state)
		}
		if c.says == "" && got.Message != "" || !strings.Contains(got.Message, c.says) {
			t.Errorf("%s: message %q; want %q", c.name, got.Message, c.says)
		}
		if c.f.Exists && (got.Reference != c.f.Reference || got.ReadyAt == nil || !got.ReadyAt.Equal(ready)) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestExportStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	there := VolumeOf{There: true}
	for _, c := range []struct {
		name     string
		vol, app string
		f        ExportFacts
		state    reported.ExportState
		says     string
	}{
		{"written", "coming", "a", ExportFacts{Exists: true, SizeBytes: 77, ReadyAt: now}, reported.ExportReady, ""},
		{"being written", "coming", "a", ExportFacts{Write: JobFacts{Running: true}, Volume: there}, reported.ExportPreparing, ""},
		{"being written, its volume gone", "ghost", "a", ExportFacts{Write: JobFacts{Running: true}}, reported.ExportPreparing, ""},
		{"its job failed", "coming", "a", ExportFacts{Write: JobFacts{Failed: true, Attempts: 1, RetryAt: now.Add(-time.Second), Message: "s3: denied"}, Volume: there}, reported.ExportFailed,
			"could not be written (attempt 1; the next try is in 0s): s3: denied"},
		{"waiting", "coming", "a", ExportFacts{Volume: there}, reported.ExportPending, ""},
		{"its volume asked absent", "going", "b", ExportFacts{}, reported.ExportFailed, "nothing to export: ask for it present, or point this export at a volume the host holds"},
		{"its volume never heard of, for an app", "ghost-data", "ghost", ExportFacts{}, reported.ExportFailed,
			"volume ghost-data is not one of this document's volumes and this host has none by that name, so nothing will make it: add it to volumes with appId ghost"},
	} {
		e := desired.DesiredExport{ExportId: "e", AppId: desired.AppId(c.app), VolumeId: desired.VolumeId(c.vol), DesiredState: desired.Present}
		got := ExportStatus(missingDoc, e, c.f, now)
		if got.State != c.state || got.ExportId != "e" {
			t.Errorf("%s: %+v; want %s", c.name, got, c.state)
		}
		if c.says == "" && got.Message != "" || !strings.Contains(got.Message, c.says) {
			t.Errorf("%s: message %q; want %q", c.name, got.Message, c.says)
		}
		if n := len([]rune(got.Message)); n > reported.MaxMessageLen {
			t.Errorf("%s: %d characters, more than a report message holds", c.name, n)
		}
		if c.f.Exists && (got.SizeBytes != 77 || got.ReadyAt == nil) {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

func TestExportsToCancel(t *testing.T) {
	doc := &desired.HostDesiredState{Exports: []desired.DesiredExport{
		{ExportId: "kept", DesiredState: desired.Present},
		{ExportId: "absent", DesiredState: desired.Absent},
	}}
	got := ExportsToCancel(doc, []string{"kept", "absent", "dropped"})
	if want := []string{"absent", "dropped"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("cancelled %v, want %v: exports are authoritative", got, want)
	}
}

func TestVolumeActionAndFailureSentences(t *testing.T) {
	at := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct{ got, want string }{
		{VolumeActionMessage(VolumeAction{Kind: Blocked, By: "a"}, 0, 0), "asked absent but held back: app a still uses it; it is deleted once no instance in the document names it"},
		{VolumeActionMessage(VolumeAction{Kind: RefuseShrink}, 4096, 512), "a volume only grows: it is 4096 bytes and the document asks for 512; ask for 4096 or more (shrinking would destroy data)"},
		{VolumeFailedMessage(VolumeAction{Kind: Provision}, 512, at, "boom"), "could not be made (tried again at 2026-12-02T06:00:00Z): boom"},
		{VolumeFailedMessage(VolumeAction{Kind: Grow}, 8192, at, "boom"), "could not be grown to 8192 bytes (tried again at 2026-12-02T06:00:00Z): boom"},
		{VolumeFailedMessage(VolumeAction{Kind: Teardown}, 0, at, "boom"), "could not be deleted (tried again at 2026-12-02T06:00:00Z): boom"},
	} {
		if c.got != c.want {
			t.Errorf("%q\nwant %q", c.got, c.want)
		}
	}
}
