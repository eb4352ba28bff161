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

