package plan

import (
	"maps"
	"reflect"
	"testing"

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
