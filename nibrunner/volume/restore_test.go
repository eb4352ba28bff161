package volume_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/checkpoint"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
	"alpnib.dev/nibrunner/volume"
)

// s3Restore is a host whose artifact store and checkpoint store are one
// bucket of a real S3 (versitygw), as a fleet that moves volumes has them.
type s3Restore struct {
	objects *store.S3
	local   *volume.Local
	cps     *checkpoint.Store
}

func newS3Restore(t *testing.T) *s3Restore {
	t.Helper()
	testenv.RequireRoot(t)
	testenv.RequireCommand(t, "mke2fs", "resize2fs", "e2fsck", "debugfs")
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "fleet")
	objects, err := store.NewS3(context.Background(), "s3://fleet")
	if err != nil {
		t.Fatal(err)
	}
	l, err := volume.NewLocal(t.TempDir(), objects)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := checkpoint.Open(context.Background(), checkpoint.Options{Dir: t.TempDir(), Objects: objects, Prefix: "checkpoints/host-a/"})
	if err != nil {
		t.Fatal(err)
	}
	return &s3Restore{objects: objects, local: l, cps: cps}
}

// seededVolume makes volume id, 32 MiB, seeded with the site and a 3 MiB
// random blob.
func (r *s3Restore) seededVolume(t *testing.T, id string) {
	t.Helper()
	archive := append([]byte(nil), bigTarGz(t, 3<<20)...)
	sum := sha256.Sum256(archive)
	if err := r.objects.Put(ctx(t), "seeds/"+id+".tar.gz", bytes.NewReader(archive), int64(len(archive))); err != nil {
		t.Fatal(err)
	}
	c := &volume.Contents{Digest: hex.EncodeToString(sum[:]), ObjectKey: "seeds/" + id + ".tar.gz", DestinationPath: "/srv"}
	v, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: id, SizeBytes: 32 << 20, State: volume.Present, InitialContents: c})
	if err != nil {
		t.Fatal(err)
	}
	if v.Restored || v.Seeded == nil {
		t.Errorf("a volume seeded from an archive says %+v; want Seeded, not Restored (a checkpoint's)", v)
	}
}

// checkpointed makes volume "blog" (seededVolume) and its checkpoint
// "c1", and returns its files and the checkpoint.
func (r *s3Restore) checkpointed(t *testing.T) (map[string]string, checkpoint.Info) {
	t.Helper()
	r.seededVolume(t, "blog")
	want := files(t, r.local.Path("blog"))
	info, err := r.cps.Create(ctx(t), "c1", checkpoint.Volume{ID: "blog", Path: r.local.Path("blog")})
	if err != nil {
		t.Fatal(err)
	}
	return want, info
}

// files dumps the files of the volume image at img (debugfs rdump, no
// mount) and maps each path to its mode and content's sha-256.
func files(t *testing.T, img string) map[string]string {
	t.Helper()
	out := t.TempDir()
	if b, err := exec.Command(testenv.RequireCommand(t, "debugfs"), "-R", "rdump /root "+out, img).CombinedOutput(); err != nil {
		t.Fatalf("debugfs rdump: %v: %s", err, b)
	}
	got := map[string]string{}
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if info.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			h := sha256.New()
			_, _ = io.Copy(h, f)
			f.Close()
			v += " " + hex.EncodeToString(h.Sum(nil))
		}
		got[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) || len(want) < 3 {
		t.Errorf("the restored volume holds %d entries, the checkpointed one %d", len(got), len(want))
	}
	for p, v := range want {
		if got[p] != v {
			t.Errorf("%s: restored %q, checkpointed %q", p, got[p], v)
		}
	}
}

// noVolume checks that volume id was left absent, not half-made.
func noVolume(t *testing.T, l *volume.Local, id string) {
	t.Helper()
	if _, err := os.Stat(l.Path(id)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused restore left volume %s on the host (%v)", id, err)
	}
	if left, _ := filepath.Glob(filepath.Join(l.Dir, ".*")); len(left) != 0 {
		t.Errorf("a refused restore left %v", left)
	}
	vols, err := l.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := vols[id]; ok {
		t.Errorf("volume %s is listed after a refused restore", id)
	}
}

func TestAVolumeDeletedAfterItsCheckpointIsRestoredFromTheCheckpointObjectAndALargerSizeGrowsIt(t *testing.T) {
	r := newS3Restore(t)
	want, info := r.checkpointed(t)
	if info.Digest == "" || info.Key != "checkpoints/host-a/c1"+checkpoint.ObjectSuffix {
		t.Fatalf("checkpoint %+v: want its key and its object's digest", info)
	}
	if _, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: "blog", State: volume.Absent}); err != nil {
		t.Fatal(err)
	}
	// The same shape of document as an export's restore: the host tells
	// the checkpoint apart by its format.
	c := &volume.Contents{Digest: info.Digest, ObjectKey: info.Key, DestinationPath: "/"}
	p := &volume.Progress{}
	v, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: "blog2", SizeBytes: 32 << 20, State: volume.Present, InitialContents: c, Progress: p})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Created || !v.Restored || v.SizeBytes != 32<<20 {
		t.Errorf("restored volume %+v; want made from the checkpoint (Restored), 32 MiB", v)
	}
	sameFiles(t, files(t, v.Path), want)
	if now := p.Now(); now.Fetched == 0 || now.Fetched != now.Total || now.Unpacked != info.Data {
		t.Errorf("progress = %+v; want the whole object fetched and the checkpoint's %d data bytes written", now, info.Data)
	}
	if alloc := testenv.Allocated(t, v.Path); alloc > info.Data+(1<<20) {
		t.Errorf("the restored image holds %d bytes on disk for %d of data; want it sparse", alloc, info.Data)
	}

	// Restored into a larger size, the filesystem grows with the file.
	big, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: "blog3", SizeBytes: 96 << 20, State: volume.Present, InitialContents: c})
	if err != nil {
		t.Fatal(err)
	}
	if big.SizeBytes != 96<<20 {
		t.Errorf("restored into 96 MiB, the volume is %d bytes", big.SizeBytes)
	}
	u, err := r.local.Usage(ctx(t), "blog3")
	if err != nil {
		t.Fatal(err)
	}
	if u.TotalBytes < 64<<20 {
		t.Errorf("the filesystem restored into 96 MiB has %d bytes; want it grown past the checkpoint's 32 MiB", u.TotalBytes)
	}
	sameFiles(t, files(t, big.Path), want)
	if left, _ := filepath.Glob(filepath.Join(r.local.Dir, ".seed-*")); len(left) != 0 {
		t.Errorf("the restores left %v", left)
	}
}

func TestARestoreIsRefusedWithASentenceAndNoVolumeWhenTheCheckpointIsLargerMisdigestedOrOfANewerFormat(t *testing.T) {
	r := newS3Restore(t)
	_, info := r.checkpointed(t)
	// A checkpoint of a format this host does not read yet: version 2.
	obj, _, err := r.objects.Get(ctx(t), info.Key)
	if err != nil {
		t.Fatal(err)
	}
	newer, _ := io.ReadAll(obj)
	obj.Close()
	newer[7] = '2'
	if err := r.objects.Put(ctx(t), "checkpoints/host-z/c9.nibsparse", bytes.NewReader(newer), int64(len(newer))); err != nil {
		t.Fatal(err)
	}
	newerSum := sha256.Sum256(newer)
	for _, tc := range []struct {
		name, digest, key string
		size              uint64
		says              []string
	}{
		{"larger than sizeBytes", info.Digest, info.Key, 16 << 20, []string{"33554432 bytes", "ask for 33554432 or more"}},
		{"a digest mismatch", strings.Repeat("0", 64), info.Key, 32 << 20, []string{"digest mismatch", info.Digest}},
		{"a newer format", hex.EncodeToString(newerSum[:]), "checkpoints/host-z/c9.nibsparse", 32 << 20, []string{"format 2", "reads format 1", "upgrade"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &volume.Contents{Digest: tc.digest, ObjectKey: tc.key, DestinationPath: "/"}
			_, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: "restored", SizeBytes: tc.size, State: volume.Present, InitialContents: c})
			if err == nil {
				t.Fatal("the restore made a volume")
			}
			for _, s := range append(tc.says, "volume restored: initialContents") {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("refusal %q does not say %q", err, s)
				}
			}
			noVolume(t, r.local, "restored")
		})
	}
	if t.Failed() {
		return
	}
	// Refused, then asked as it fits: made.
	c := &volume.Contents{Digest: info.Digest, ObjectKey: info.Key, DestinationPath: "/"}
	if _, err := r.local.Converge(ctx(t), volume.Spec{VolumeID: "restored", SizeBytes: 32 << 20, State: volume.Present, InitialContents: c}); err != nil {
		t.Fatalf("the restore asked at the checkpoint's size: %v", err)
	}
}

func TestARestoreInterruptedWhileGrowingResumesWithoutFetchingTheCheckpointAgain(t *testing.T) {
	r := newS3Restore(t)
	want, info := r.checkpointed(t)
	c := &volume.Contents{Digest: info.Digest, ObjectKey: info.Key, DestinationPath: "/"}
	// The first daemon's resize2fs never ends: it is stopped halfway.
	hang := filepath.Join(t.TempDir(), "resize2fs")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	first, err := volume.NewLocal(t.TempDir(), r.objects)
	if err != nil {
		t.Fatal(err)
	}
	first.Resize2fs = hang
	p := &volume.Progress{}
	cctx, cancel := context.WithCancel(ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := first.Converge(cctx, volume.Spec{VolumeID: "v", SizeBytes: 64 << 20, State: volume.Present, InitialContents: c, Progress: p})
		done <- err
	}()
	waitPhase(t, p, volume.Formatting, done)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted restore returned %v", err)
	}
	if _, err := os.Stat(first.Path("v")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the interrupted restore left a volume (%v)", err)
	}

	// The next daemon opens the same folder, its store counting fetches.
	gets := &countingStore{Store: r.objects}
	l, err := volume.NewLocal(first.Dir, gets)
	if err != nil {
		t.Fatal(err)
	}
	p2 := &volume.Progress{}
	v, err := l.Converge(ctx(t), volume.Spec{VolumeID: "v", SizeBytes: 64 << 20, State: volume.Present, InitialContents: c, Progress: p2})
	if err != nil {
		t.Fatal(err)
	}
	if e := p2.Now().Earlier; e == nil || !e.Resumed {
		t.Fatalf("earlier = %+v; want the interrupted attempt's whole checkpoint resumed", e)
	}
	if gets.n != 0 {
		t.Errorf("the resumed restore fetched the checkpoint %d times; want none", gets.n)
	}
	sameFiles(t, files(t, v.Path), want)
}

type countingStore struct {
	store.Store
	n int
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	c.n++
	return c.Store.Get(ctx, key)
}
