package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/db"
	"alpnib.dev/nibrunner/desired"
	"alpnib.dev/nibrunner/export"
	"alpnib.dev/nibrunner/guestimage"
	"alpnib.dev/nibrunner/reported"
	"alpnib.dev/nibrunner/slot/slottest"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

// s3Background opens the checkpoint store and export writer on the S3
// server, under s3://ckpt/<host> and s3://exports/<host>.
func s3Background(t *testing.T, dir, host string) (*checkpoint.Store, *export.Writer) {
	t.Helper()
	ctx := context.Background()
	open := func(url string) *store.S3 {
		st, err := store.NewS3(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		st.SetPartSize(5 << 20)
		return st
	}
	cps, err := checkpoint.Open(ctx, checkpoint.Options{Dir: filepath.Join(dir, "checkpoints"), Objects: open("s3://ckpt/" + host), Prefix: "checkpoints/"})
	if err != nil {
		t.Fatal(err)
	}
	exps, err := export.Open(ctx, export.Options{Objects: open("s3://exports/" + host), StagingDir: filepath.Join(dir, "export-staging"), RecordDir: filepath.Join(dir, "exports")})
	if err != nil {
		t.Fatal(err)
	}
	return cps, exps
}

// runQEMU opens a daemon on dir (real QEMU, the given background) and runs
// it until the test ends.
func runQEMU(t *testing.T, dir string, img guestimage.Image, cps Checkpoints, exps Exports) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d, v, err := openQEMUDaemonWith(ctx, dir, img, nil, t.Logf, cps, exps)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		d.Close()
		v.Close()
	})
}

// pinSlot gives app the slot n before any daemon runs on dir, so its host
// port (QEMU's user-network forward) is one no other test here uses.
func pinSlot(t *testing.T, dir, app string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := db.Open(context.Background(), filepath.Join(dir, "state", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutSlots(context.Background(), map[string]int{app: n}); err != nil {
		t.Fatal(err)
	}
}

// mountRO mounts the ext4 image read-only until the test ends.
func mountRO(t *testing.T, img string) string {
	t.Helper()
	mnt := t.TempDir()
	dev, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Fatalf("losetup %s: %v", img, err)
	}
	loop := strings.TrimSpace(string(dev))
	t.Cleanup(func() { exec.Command("losetup", "--detach", loop).Run() })
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "ro", loop, mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", img, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	return mnt
}

// tree maps every path under root to its type, permissions, owner and, for
// a file, its sha256; for a symlink, its target.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		v := fmt.Sprintf("%s %d:%d", info.Mode(), st.Uid, st.Gid)
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestARunningGuestsVolumeIsCheckpointedAndExportedToS3AndTheExportRestoresOnASecondHost
// is issue 11's CI lane: a tenant in a real microVM writes files; a
// checkpoint and an export of its volume, taken while it runs, land in
// S3 (the guest frozen for the copy and serving after it); the export,
// downloaded, seeds a fresh volume on a second daemon, whose tenant
// serves the same files, and whose volume holds the same tree.
func TestARunningGuestsVolumeIsCheckpointedAndExportedToS3AndTheExportRestoresOnASecondHost(t *testing.T) {
	dirA, img := qemuTestDir(t)
	dirB, _ := qemuTestDir(t)
	testenv.RequireCommand(t, "losetup", "mount", "umount")
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "ckpt")
	srv.Bucket(t, "exports")
	ctx := context.Background()

	bin := filepath.Join(dirA, "notes")
	build := exec.Command("go", "build", "-o", bin, "./testdata/notes")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the tenant: %v\n%s", err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	app := func(h *host, name string) desired.DesiredInstance {
		in := h.app(name, name+"-1")
		in.Layers = []desired.DesiredLayer{{Kind: desired.LayerExecutable, Digest: putObject(t, h.dir, "apps/notes", exe), ObjectKey: "apps/notes", DestinationPath: "/app/notes"}}
		in.Config.Command.Program = "/app/notes"
		in.Config.HealthCheck = desired.HealthCheck{Kind: desired.HealthHTTP, Path: "/_/token", IntervalMs: 1000, TimeoutMs: 5000,
			GracePeriodMs: 300000, HealthyThreshold: 1, UnhealthyThreshold: 3}
		return in
	}
	pinSlot(t, dirA, "notes", slottest.Free(t))
	pinSlot(t, dirB, "copy", slottest.Free(t))

	hA := &host{dir: dirA}
	dA := doc(app(hA, "notes"))
	dA.Volumes[0].SizeBytes = 64 << 20
	hA.write(t, dA)
	cps, exps := s3Background(t, dirA, "host-a")
	runQEMU(t, dirA, img, cps, exps)
	console := func(dir, app string) func() string {
		return func() string {
			b, _ := os.ReadFile(filepath.Join(dir, "run", app, "console.log"))
			return string(b)
		}
	}
	r := hA.waitLong(t, "notes running", allIn(reported.InstanceRunning, "notes"), console(dirA, "notes"))
	base := fmt.Sprintf("http://127.0.0.1:%d", instance(r, "notes").HostPort)
	files := map[string]string{"note.txt": "written in the guest\n", "other.txt": strings.Repeat("x", 100000)}
	for name, body := range files {
		req, _ := http.NewRequest(http.MethodPut, base+"/_/files/"+name, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("write %s in the guest: %v %+v", name, err, resp)
		}
		resp.Body.Close()
	}

	// Checkpoint and export it while it runs.
	dA.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "c1", VolumeId: "notes-data", DesiredState: desired.Present}}
	dA.Exports = []desired.DesiredExport{{ExportId: "e1", AppId: "notes", VolumeId: "notes-data", ObjectKey: "notes/e1.tar.gz", DesiredState: desired.Present,
		Environment: desired.TenantEnvironment{"GREETING": "hello there"}}}
	hA.write(t, dA)
	r = hA.waitLong(t, "c1 and e1 ready", func(r *reported.HostReportedState) bool {
		return len(r.Checkpoints) == 1 && r.Checkpoints[0].State == reported.CheckpointReady &&
			len(r.Exports) == 1 && r.Exports[0].State == reported.ExportReady
	}, console(dirA, "notes"))
	if ref := r.Checkpoints[0].Reference; ref != "s3://ckpt/host-a/checkpoints/c1.nibsparse" {
		t.Errorf("checkpoint reference %q", ref)
	}
	if _, err := srv.Client.StatObject(ctx, "ckpt", "host-a/checkpoints/c1.nibsparse", minio.StatObjectOptions{}); err != nil {
		t.Errorf("the checkpoint is not in S3: %v", err)
	}
	st, err := srv.Client.StatObject(ctx, "exports", "host-a/notes/e1.tar.gz", minio.StatObjectOptions{})
	if err != nil || uint64(st.Size) != r.Exports[0].SizeBytes || r.Exports[0].ReadyAt == nil {
		t.Fatalf("the export in S3: %+v, %v; reported %+v", st, err, r.Exports[0])
	}
	resp, err := http.Get(base + "/note.txt")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the guest does not serve after its checkpoint: %v %+v", err, resp)
	}
	resp.Body.Close()

	// The second host seeds a fresh volume from the downloaded export.
	archive := filepath.Join(dirB, "store", "restore", "notes.tar.gz")
	os.MkdirAll(filepath.Dir(archive), 0o755)
	if err := srv.Client.FGetObject(ctx, "exports", "host-a/notes/e1.tar.gz", archive, minio.GetObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(archive)
	hB := &host{dir: dirB}
	dB := doc(app(hB, "copy"))
	dB.Volumes[0].SizeBytes = 64 << 20
	dB.Volumes[0].InitialContents = &desired.InitialContents{Digest: putObject(t, dirB, "restore/notes.tar.gz", b), ObjectKey: "restore/notes.tar.gz", DestinationPath: "/"}
	dB.Checkpoints = []desired.DesiredCheckpoint{{CheckpointId: "c2", VolumeId: "copy-data", DesiredState: desired.Present}}
	hB.write(t, dB)
	runQEMU(t, dirB, img, nil, nil)
	r = hB.waitLong(t, "copy running and checkpointed", func(r *reported.HostReportedState) bool {
		in := instance(r, "copy")
		return in != nil && in.State == reported.InstanceRunning && len(r.Checkpoints) == 1 && r.Checkpoints[0].State == reported.CheckpointReady
	}, console(dirB, "copy"))
	baseB := fmt.Sprintf("http://127.0.0.1:%d", instance(r, "copy").HostPort)
	for name, body := range files {
		resp, err := http.Get(baseB + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != body {
			t.Errorf("the restored guest serves %s as %d bytes, want the %d written on the first host", name, len(got), len(body))
		}
	}

	// Both checkpoints hold the same tree of the app's files.
	imgA := filepath.Join(dirA, "c1.img")
	obj, err := srv.Client.GetObject(ctx, "ckpt", "host-a/checkpoints/c1.nibsparse", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = checkpoint.ReadSparse(obj, imgA)
	obj.Close()
	if err != nil {
		t.Fatal(err)
	}
	want := tree(t, filepath.Join(mountRO(t, imgA), "root"))
	got := tree(t, filepath.Join(mountRO(t, filepath.Join(dirB, "checkpoints", "c2.img")), "root"))
	if _, ok := want["data/note.txt"]; !ok {
		t.Fatalf("the first host's checkpoint holds no data/note.txt: %v", want)
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: restored %q, original %q", p, got[p], v)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s is in the restored volume only", p)
		}
	}
	if t.Failed() {
		t.Logf("original tree %v", want)
	}
}
