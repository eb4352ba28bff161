package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/network"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/route"
	"alpnib.dev/nibrunner/vmm/fake"
	"alpnib.dev/nibrunner/volume"
)

func TestAGuestWhoseVolumeWasLostIsRecoveredOnANewOne(t *testing.T) {
	h := newHost(t)
	_, v, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1")))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	pid := pids(t, v)["a"].PID
	if err := os.Remove(filepath.Join(h.dir, "volumes", "a-data.img")); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a recovered", func(r *reported.HostReportedState) bool {
		st, ok := pids(t, v)["a"]
		return ok && st.PID != pid && stateOf(r, "a") == reported.InstanceRunning
	})
	if _, err := os.Stat(filepath.Join(h.dir, "volumes", "a-data.img")); err != nil {
		t.Fatalf("the volume was not made again: %v", err)
	}
	if r := h.readReport(t); instance(r, "a").RestartCount != 0 {
		t.Fatal("a recovery counted as a restart")
	}
}

func TestAVolumeAskedSmallerFailsSayingSoAndKeepsItsSize(t *testing.T) {
	h := newHost(t)
	h.start(t)
	d := doc(h.app("a", "a1"))
	h.write(t, d)
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	d.Volumes[0].SizeBytes = 4096
	h.write(t, d)
	r := h.waitFor(t, "the volume failed", func(r *reported.HostReportedState) bool {
		return volumeOf(r, "a-data") != nil && volumeOf(r, "a-data").State == reported.VolumeFailed
	})
	vol := volumeOf(r, "a-data")
	if !strings.Contains(vol.Message, "only grows") || vol.SizeBytes != 1<<20 {
		t.Fatalf("volume %+v", vol)
	}
	if stateOf(r, "a") != reported.InstanceRunning {
		t.Fatal("a refused shrink took the app down")
	}

	// Asked for exactly the size it has, as the message advises: nothing
	// to do, and nothing wrong any more.
	d.Volumes[0].SizeBytes = 1 << 20
	h.write(t, d)
	h.waitFor(t, "the volume ready at its size", func(r *reported.HostReportedState) bool {
		vol := volumeOf(r, "a-data")
		return vol != nil && vol.State == reported.VolumeReady && vol.Message == "" && vol.SizeBytes == 1<<20
	})

	d.Volumes[0].SizeBytes = 2 << 20
	h.write(t, d)
	h.waitFor(t, "the volume grown and a back up", func(r *reported.HostReportedState) bool {
		vol := volumeOf(r, "a-data")
		return vol != nil && vol.State == reported.VolumeReady && vol.SizeBytes == 2<<20 && stateOf(r, "a") == reported.InstanceRunning
	})
}

func TestAGrownVolumeReportsItsNewTotalInTheReportThatShowsItGrown(t *testing.T) {
	testenv.RequireCommand(t, "mke2fs", "e2fsck", "resize2fs")
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	// Real ext4 volumes, whose superblock the usage is read from.
	vols, err := volume.NewLocal(filepath.Join(h.dir, "volumes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	deps.Volumes = vols
	h.run(t, deps)
	d := doc()
	d.Volumes = []desired.DesiredVolume{{VolumeId: "v", AppId: "a", SizeBytes: 16 << 20, DesiredState: desired.Present}}
	h.write(t, d)
	before := volumeOf(h.waitFor(t, "v measured", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "v")
		return v != nil && v.Usage != nil
	}), "v").Usage.TotalBytes
	d.Volumes[0].SizeBytes = 32 << 20
	h.write(t, d)
	r := h.waitFor(t, "v grown", func(r *reported.HostReportedState) bool {
		v := volumeOf(r, "v")
		return v != nil && v.SizeBytes == 32<<20
	})
	now, err := vols.Usage(context.Background(), "v")
	if err != nil {
		t.Fatal(err)
	}
	if now.TotalBytes <= before {
		t.Fatalf("the filesystem did not grow: %d bytes before, %d after", before, now.TotalBytes)
	}
	if u := volumeOf(r, "v").Usage; u == nil || u.TotalBytes != now.TotalBytes {
		t.Fatalf("the report that shows v grown to %d bytes says its usage is %+v; its filesystem holds %d bytes (%d before the grow)", 32<<20, u, now.TotalBytes, before)
	}
}

func TestAnInstanceThisHostCannotCarryFailsByNameAndTheDocumentIsStillTaken(t *testing.T) {
	h := newHost(t)
	_, v, _ := h.start(t)
	withPorts := h.app("b", "b1")
	for i := 0; i < 8; i++ {
		withPorts.Config.Ports = append(withPorts.Config.Ports, desired.InstancePort{Name: desired.PortName("p" + string(rune('a'+i))), GuestPort: desired.GuestPort(9000 + i)})
	}
	digest := h.write(t, doc(h.app("a", "a1"), withPorts))
	r := h.waitFor(t, "a running, b failed", func(r *reported.HostReportedState) bool {
		return stateOf(r, "a") == reported.InstanceRunning && stateOf(r, "b") == reported.InstanceFailed
	})
	if string(r.AcceptedDigest) != digest || r.Message != "" {
		t.Fatalf("the document was not taken: %+v", r)
	}
	if msg := instance(r, "b").Message; !strings.Contains(msg, "8 ports") || !strings.Contains(msg, "max_ports_per_guest") {
		t.Fatalf("message %q", msg)
	}
	if _, up := pids(t, v)["b"]; up {
		t.Fatal("b was started")
	}
}

func TestAnAppThatTurnsUnhealthyIsRestarted(t *testing.T) {
	h := newHost(t)
	h.expectRestarts()
	_, v, _ := h.start(t)
	app := h.app("a", "a1")
	app.Config.HealthCheck.GracePeriodMs, app.Config.HealthCheck.UnhealthyThreshold = 0, 3
	h.write(t, doc(app))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	pid := pids(t, v)["a"].PID
	if err := v.SetHealth("a", 503); err != nil {
		t.Fatal(err)
	}
	h.waitFor(t, "a restarted", func(r *reported.HostReportedState) bool {
		a := instance(r, "a")
		st, ok := pids(t, v)["a"]
		return a != nil && ok && st.PID != pid && a.RestartCount == 1 && a.State == reported.InstanceRunning
	})
}

func TestCheckpointsAreMadeReportedAndDeletedOnlyWhenAskedAbsent(t *testing.T) {
	h := newHost(t)
	h.start(t)
	d := doc(h.app("a", "a1"))
	d.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "c1", VolumeId: "a-data", DesiredState: desired.Present}}
	h.write(t, d)
	r := h.waitFor(t, "c1 ready", func(r *reported.HostReportedState) bool {
		return len(r.Checkpoints) == 1 && r.Checkpoints[0].State == reported.CheckpointReady
	})
	ref := r.Checkpoints[0].Reference
	if _, err := os.Stat(ref); err != nil || r.Checkpoints[0].ReadyAt == nil {
		t.Fatalf("checkpoint %+v: %v", r.Checkpoints[0], err)
	}
	// Dropped from the list: kept.
	d.Checkpoints = []desired.DesiredCheckpoint{}
	h.write(t, d)
	h.waitFor(t, "the checkpoint gone from the report", func(r *reported.HostReportedState) bool { return len(r.Checkpoints) == 0 })
	if _, err := os.Stat(ref); err != nil {
		t.Fatalf("a checkpoint that vanished from the document was deleted: %v", err)
	}
	// Asked absent: deleted.
	d.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "c1", VolumeId: "a-data", DesiredState: desired.Absent}}
	h.write(t, d)
	h.deadlineWait(t, func() bool { _, err := os.Stat(ref); return os.IsNotExist(err) })
}

func TestAnExportThatCannotBeWrittenIsReportedFailedSayingWhyAndWhenItIsTriedAgain(t *testing.T) {
	h := newHost(t)
	h.start(t)
	d := doc(h.app("a", "a1"))
	d.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "a", VolumeId: "a-data", ObjectKey: "exports/a.tar.gz", DesiredState: desired.Present}}
	h.write(t, d)
	r := h.waitFor(t, "e1 failed", func(r *reported.HostReportedState) bool {
		return len(r.Exports) == 1 && r.Exports[0].State == reported.ExportFailed
	})
	// The harness's volumes are plain files, not ext4: the copy cannot be
	// read as a filesystem.
	// The first report that shows it failed may come after a retry on a
	// busy machine: any attempt, but always why and when it is tried again.
	if m := r.Exports[0].Message; !strings.Contains(m, "export e1: ") || !strings.HasPrefix(m, "could not be written (attempt ") || !strings.Contains(m, "; the next try is in ") {
		t.Fatalf("message %q", r.Exports[0].Message)
	}
}

func stateOf(r *reported.HostReportedState, app string) reported.InstanceState {
	if in := instance(r, app); in != nil {
		return in.State
	}
	return ""
}

func TestAWakeForAStoppedOrUnlistedAppIsRefused(t *testing.T) {
	h := newHost(t)
	d, _, _ := h.start(t)
	h.write(t, doc(h.app("a", "a1", withState(desired.StateStopped))))
	h.waitFor(t, "a stopped", allIn(reported.InstanceStopped, "a"))
	for _, app := range []string{"a", "nobody"} {
		if err := d.Wake(context.Background(), app); !errors.Is(err, route.ErrNotRunning) {
			t.Fatalf("wake %s: %v", app, err)
		}
	}
}

// sleepless is a VMM whose snapshots always fail.
type sleepless struct{ *fake.VMM }

func (sleepless) Sleep(context.Context, string) error { return errors.New("the snapshot disk is full") }

func TestAFailedSleepLeavesTheAppUpAndSaysWhenItTriesAgain(t *testing.T) {
	h := newHost(t)
	deps, _, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	deps.VMM = sleepless{deps.VMM.(*fake.VMM)}
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	h.watch(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; d.Close() })

	app := h.app("a", "a1", withState(desired.StateOnRequest))
	h.write(t, doc(app))
	h.waitFor(t, "a running", allIn(reported.InstanceRunning, "a"))
	h.offset.Store(int64(10 * time.Minute))
	r := h.waitFor(t, "the failed sleep reported", func(r *reported.HostReportedState) bool {
		return strings.Contains(instance(r, "a").Message, "could not be put to sleep")
	})
	a := instance(r, "a")
	if a.State != reported.InstanceRunning || !strings.Contains(a.Message, "the snapshot disk is full") || !strings.Contains(a.Message, "next try in") {
		t.Fatalf("a: %+v", a)
	}
}

// brokenNetwork refuses to apply the host's rules until fixed.
type brokenNetwork struct{ fixed atomic.Bool }

func (n *brokenNetwork) Apply(context.Context, []network.App) error {
	if !n.fixed.Load() {
		return errors.New("nft: table nibrun could not be loaded")
	}
	return nil
}

func TestNoGuestStartsUntilTheNetworkRulesAreInPlace(t *testing.T) {
	h := newHost(t)
	deps, v, err := h.deps(false)
	if err != nil {
		t.Fatal(err)
	}
	net := &brokenNetwork{}
	deps.Network = net
	d, err := Open(context.Background(), h.config(), deps)
	if err != nil {
		t.Fatal(err)
	}
	h.watch(d)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; d.Close() })

	h.write(t, doc(h.app("a", "a1")))
	r := h.waitFor(t, "a waiting for the network", allIn(reported.InstancePending, "a"))
	if msg := instance(r, "a").Message; msg != "waiting to be started: the host network rules are not in place yet (nft: table nibrun could not be loaded)" {
		t.Fatalf("message %q", msg)
	}
	if got := pids(t, v); len(got) != 0 {
		t.Fatalf("guests started before the network rules: %v", got)
	}
	net.fixed.Store(true)
	h.waitFor(t, "a running once the rules are in place", allIn(reported.InstanceRunning, "a"))
}
