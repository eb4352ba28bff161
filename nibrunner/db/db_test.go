package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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
	failed := VolumeFailure{VolumeID: "w", Kind: "provision", SizeBytes: 4096, Seed: "aa", Count: 3, At: at, Message: "could not be made"}
	for _, f := range []VolumeFailure{{VolumeID: "w", Kind: "grow", Count: 1, At: at}, failed, {VolumeID: "x", Kind: "grow", Count: 1, At: at}} {
		if err := d.PutVolumeFailure(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.ClearVolumeFailure(ctx, "x"); err != nil {
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
	if fs, err := d.VolumeFailures(ctx); err != nil || len(fs) != 1 || fs["w"] != failed {
		t.Fatalf("volume failures = %v, %v; want only %+v", fs, err, failed)
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
	if err := d.PutSlots(ctx, map[string]int{"a": 0}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, Change{Put: []Record{{AppID: "a", DeploymentID: "d", Data: []byte("x")}}, Meters: map[string]Meters{"a": {CpuMs: 1}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, Change{Delete: []string{"a"}}); err != nil {
		t.Fatal(err)
	}
	recs, _ := d.Records(ctx)
	m, _ := d.AllMeters(ctx)
	if len(recs) != 0 || len(m) != 0 {
		t.Fatalf("records %v meters %v", recs, m)
	}
}

func TestARecordIsRefusedUntilItsAppHasASlot(t *testing.T) {
	ctx := context.Background()
	d := open(t, filepath.Join(t.TempDir(), "state.db"))
	rec := Change{Put: []Record{{AppID: "a", DeploymentID: "d", Data: []byte("x")}}}
	err := d.Apply(ctx, rec)
	if err == nil || !strings.Contains(err.Error(), "persist the record of a") || !strings.Contains(err.Error(), "only after its app has a slot") {
		t.Fatalf("a record without a slot: %v", err)
	}
	if recs, _ := d.Records(ctx); len(recs) != 0 {
		t.Fatalf("the refused record was kept: %v", recs)
	}
	if err := d.PutSlots(ctx, map[string]int{"a": 0}); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(ctx, rec); err != nil {
		t.Fatalf("with its slot written first: %v", err)
	}
}

func TestADatabaseOfTheFirstVersionIsMigratedKeepingItsRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	// A database as the first release left it: migration 1 only.
	old, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{migrations[0], `INSERT INTO instances (app_id, deployment_id, record) VALUES ('a', 'd1', 'x')`, `PRAGMA user_version = 1`} {
		if _, err := old.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	d := open(t, path)
	if v, _ := d.Version(ctx); v != len(migrations) {
		t.Fatalf("version after opening = %d, want %d", v, len(migrations))
	}
	if recs, _ := d.Records(ctx); string(recs["a"].Data) != "x" {
		t.Fatalf("the migration lost a row: %v", recs)
	}
	if err := d.Apply(ctx, Change{Put: []Record{{AppID: "b", DeploymentID: "d", Data: []byte("y")}}}); err == nil {
		t.Fatal("the migrated database took a record without a slot")
	}
}

func TestADatabaseFromANewerDaemonIsRefusedSayingSo(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	d := open(t, path)
	if _, err := d.sql.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer than this daemon knows") {
		t.Fatalf("opening a newer database: %v", err)
	}
}

func TestTheDatabaseAndItsWALAreTheOwnersAloneEvenUnderAnOpenUmask(t *testing.T) {
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	d := open(t, path)
	if err := d.PutSlots(ctx, map[string]int{"a": 0}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			st, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if m := st.Mode().Perm(); m != 0o600 {
				t.Errorf("%s: %s is %#o, want 0600", when, filepath.Base(p), m)
			}
		}
	}
	check("a new database")
	d.Close()

	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		_ = os.Chmod(p, 0o644)
	}
	d = open(t, path)
	if err := d.PutSlots(ctx, map[string]int{"b": 1}); err != nil {
		t.Fatal(err)
	}
	check("a database found 0644")
}
