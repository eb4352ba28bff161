package qemu

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"alpnib.dev/nibrunner/vmm"
)

func TestAWakeCutShortByItsContextKeepsTheSnapshotForTheNextWake(t *testing.T) {
	dir := t.TempDir()
	v := &VMM{cfg: Config{RuntimeDir: filepath.Join(dir, "run"), SnapshotDir: filepath.Join(dir, "snap")}, guests: map[string]*vmGuest{}}
	snap := v.snapDir("app")
	if err := os.MkdirAll(snap, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snap, stateFile), []byte("the guest's memory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeStamp(snap, Stamp{AppID: "app", DeploymentID: "d1"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the daemon is closing
	if _, err := v.Wake(ctx, vmm.Spec{AppID: "app", DeploymentID: "d1"}); err == nil {
		t.Fatal("a wake with its context ended booted something")
	}
	if !v.HasSnapshot("app") {
		t.Fatal("a wake cut short by its context dropped the snapshot; the next wake can only boot cold")
	}
}
