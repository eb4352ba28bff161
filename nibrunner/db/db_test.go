package db

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func open(t *testing.T, path string) *DB {
	t.Helper()
	d, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestEverythingSurvivesReopening(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d := open(t, path)
	at := time.UnixMilli(1_700_000_000_000).UTC()
	if err := d.SetAccepted(ctx, Accepted{Digest: "abc", Document: []byte(`{"hostId":"h"}`), AcceptedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := d.PutSlots(ctx, map[string]int{"a": 0, "b": 1}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, Change{Put: []Record{{AppID: "a", DeploymentID: "d1", Data: []byte("x")}}, Meters: map[string]Meters{"a": {RunningMs: 5}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.MarkVolumeDeleted(ctx, DeletedVolume{VolumeID: "v", AppID: "a", SizeBytes: 512, DeletedAt: at}); err != nil {
		t.Fatal(err)
	}
	d.Close()

	d = open(t, path)
	a, ok, err := d.Accepted(ctx)
	if err != nil || !ok || a.Digest != "abc" || string(a.Document) != `{"hostId":"h"}` || !a.AcceptedAt.Equal(at) {
		t.Fatalf("accepted = %+v %v %v", a, ok, err)
	}
	slots, _ := d.Slots(ctx)
	if slots["a"] != 0 || slots["b"] != 1 || len(slots) != 2 {
		t.Fatalf("slots = %v", slots)
	}
	recs, _ := d.Records(ctx)
	if string(recs["a"].Data) != "x" || recs["a"].DeploymentID != "d1" {
		t.Fatalf("records = %v", recs)
	}
	m, _ := d.AllMeters(ctx)
	if m["a"].RunningMs != 5 {
		t.Fatalf("meters = %v", m)
	}
	dv, _ := d.DeletedVolumes(ctx)
	if dv["v"].SizeBytes != 512 {
		t.Fatalf("deleted volumes = %v", dv)
	}
	if v, _ := d.Version(ctx); v != len(migrations) {
		t.Fatalf("version = %d", v)
	}
}

func TestMetersOnlyGrow(t *testing.T) {
	ctx := context.Background()
	d := open(t, filepath.Join(t.TempDir(), "state.db"))
	d.Apply(ctx, Change{Meters: map[string]Meters{"a": {RunningMs: 100, RxBytes: 10}}})
	d.Apply(ctx, Change{Meters: map[string]Meters{"a": {RunningMs: 50, RxBytes: 20}}})
	m, _ := d.AllMeters(ctx)
	if m["a"].RunningMs != 100 || m["a"].RxBytes != 20 {
		t.Fatalf("meters = %+v", m["a"])
	}
}

func TestASlotIsNeverReassignedOrSharedByTwoApps(t *testing.T) {
	ctx := context.Background()
	d := open(t, filepath.Join(t.TempDir(), "state.db"))
	d.PutSlots(ctx, map[string]int{"a": 3})
	d.PutSlots(ctx, map[string]int{"a": 4})
	if s, _ := d.Slots(ctx); s["a"] != 3 {
		t.Fatalf("slot of a moved to %d", s["a"])
	}
	if err := d.PutSlots(ctx, map[string]int{"b": 3}); err == nil {
		t.Fatal("two apps were given slot 3")
	}
	d.ReleaseSlot(ctx, "a")
	if err := d.PutSlots(ctx, map[string]int{"b": 3}); err != nil {
		t.Fatalf("a released slot could not be reused: %v", err)
	}
}

func TestForgettingAnAppDropsItsRecordAndMeters(t *testing.T) {
	ctx := context.Background()
	d := open(t, filepath.Join(t.TempDir(), "state.db"))
	d.Apply(ctx, Change{Put: []Record{{AppID: "a", DeploymentID: "d", Data: []byte("x")}}, Meters: map[string]Meters{"a": {CpuMs: 1}}})
	d.Apply(ctx, Change{Delete: []string{"a"}})
	recs, _ := d.Records(ctx)
	m, _ := d.AllMeters(ctx)
	if len(recs) != 0 || len(m) != 0 {
		t.Fatalf("records %v meters %v", recs, m)
	}
}
