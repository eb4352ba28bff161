package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"alpnib.dev/internal/testenv"
	"alpnib.dev/nibrunner/store"
	"alpnib.dev/nibrunner/store/s3test"
)

func digest(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return string(h.Sum(nil))
}

func TestASparseCopyWritesOnlyTheDataAndKeepsTheHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "vol"), filepath.Join(dir, "copy")
	testenv.SparseFile(t, src, 64<<20, 1<<20, 0, 30<<20, 63<<20)
	st, err := CopySparse(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != 64<<20 || st.Data != 3<<20 {
		t.Errorf("copy stats %+v, want size 64 MiB holding 3 MiB", st)
	}
	if !st.Cloned && st.Written != 3<<20 {
		t.Errorf("the copy wrote %d bytes, want the 3 MiB of data", st.Written)
	}
	if a := testenv.Allocated(t, dst); a > 4<<20 {
		t.Errorf("the copy takes %d bytes on disk, want about 3 MiB", a)
	}
	if digest(t, src) != digest(t, dst) {
		t.Error("the copy's bytes differ from the volume's")
	}
}

func TestTheSparseContainerHoldsOnlyTheDataAndRestoresTheFileWithItsHoles(t *testing.T) {
	dir := t.TempDir()
	src, back := filepath.Join(dir, "vol"), filepath.Join(dir, "back")
	testenv.SparseFile(t, src, 64<<20, 4096, 0, 8192, 40<<20, 64<<20-4096)
	var buf bytes.Buffer
	n, err := WriteSparse(context.Background(), &buf, src)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n > 4*4096+1024 {
		t.Errorf("the container is %d bytes (reported %d), want the 16 KiB of data and a few headers", buf.Len(), n)
	}
	size, err := ReadSparse(&buf, back)
	if err != nil {
		t.Fatal(err)
	}
	if size != 64<<20 || digest(t, src) != digest(t, back) {
		t.Errorf("restored %d bytes differing from the original", size)
	}
	if a := testenv.Allocated(t, back); a > 1<<20 {
		t.Errorf("the restored file takes %d bytes on disk; its holes were filled", a)
	}
}

func TestAContainerCutShortIsRefusedAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 1<<20, 4096, 0)
	var buf bytes.Buffer
	if _, err := WriteSparse(context.Background(), &buf, src); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back")
	if _, err := ReadSparse(bytes.NewReader(buf.Bytes()[:buf.Len()-20]), back); err == nil {
		t.Fatal("a truncated container was read as whole")
	}
	if _, err := os.Stat(back); !os.IsNotExist(err) {
		t.Error("a truncated container left a file behind")
	}
}

// freezer records freezes and thaws, and the bound each freeze was given.
type freezer struct {
	mu      sync.Mutex
	events  []string
	bound   time.Duration
	failure error
}

func (f *freezer) Freeze(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "freeze")
	if dl, ok := ctx.Deadline(); ok {
		f.bound = time.Until(dl)
	}
	return f.failure
}

func (f *freezer) Thaw(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, "thaw")
	return nil
}

func (f *freezer) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.events, " ")
}

func TestASnapshotOfAMountedVolumeFreezesItForTheCopyWithinTheBoundAndThawsIt(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 8<<20, 4096, 0)
	f := &freezer{}
	st, err := Snapshot(context.Background(), Volume{ID: "v", Path: src, Freezer: f}, filepath.Join(dir, "copy"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if f.String() != "freeze thaw" {
		t.Errorf("the guest saw %q, want one freeze then one thaw", f)
	}
	if f.bound <= 0 || f.bound > 3*time.Second {
		t.Errorf("the freeze was bounded by %s, want the 3s asked", f.bound)
	}
	if st.Frozen <= 0 || st.Frozen > 3*time.Second {
		t.Errorf("frozen for %s", st.Frozen)
	}
}

func TestASnapshotWhoseCopyFailsStillThawsTheGuest(t *testing.T) {
	dir := t.TempDir()
	f := &freezer{}
	_, err := Snapshot(context.Background(), Volume{ID: "v", Path: filepath.Join(dir, "missing"), Freezer: f}, filepath.Join(dir, "copy"), time.Second)
	if err == nil || !strings.Contains(err.Error(), "copy volume v") {
		t.Fatalf("Snapshot of a missing file = %v, want an error naming the volume", err)
	}
	if f.String() != "freeze thaw" {
		t.Errorf("the guest saw %q, want it thawed after the failed copy", f)
	}
}

func TestASnapshotWhoseFreezeFailsThawsAnywayAndSaysWhy(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 1<<20, 4096, 0)
	f := &freezer{failure: errors.New("the guest's control channel is not connected")}
	_, err := Snapshot(context.Background(), Volume{ID: "v", Path: src, Freezer: f}, filepath.Join(dir, "copy"), time.Second)
	if err == nil || !strings.Contains(err.Error(), "freeze the filesystem of volume v") {
		t.Fatalf("Snapshot = %v, want the freeze's failure", err)
	}
	if f.String() != "freeze thaw" {
		t.Errorf("the guest saw %q, want a thaw after the failed freeze", f)
	}
	if _, err := os.Stat(filepath.Join(dir, "copy")); !os.IsNotExist(err) {
		t.Error("a failed snapshot left a copy")
	}
}

func TestACheckpointIsKeptUploadedListedAndDeletedWithItsObject(t *testing.T) {
	dir := t.TempDir()
	objects, err := store.NewDir(filepath.Join(dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: filepath.Join(dir, "ckpt"), Objects: objects, Prefix: "checkpoints/"})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 32<<20, 1<<20, 0, 16<<20)
	info, err := s.Create(ctx, "c1", Volume{ID: "v", Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if info.VolumeID != "v" || info.ReadyAt.IsZero() || info.Reference != filepath.Join(dir, "objects", "checkpoints", "c1.nibsparse") {
		t.Errorf("info %+v", info)
	}
	r, _, err := objects.Get(ctx, "checkpoints/c1.nibsparse")
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back")
	_, err = ReadSparse(r, back)
	r.Close()
	if err != nil || digest(t, back) != digest(t, src) {
		t.Fatalf("the uploaded checkpoint does not restore the volume: %v", err)
	}
	list, err := s.List(ctx)
	if err != nil || list["c1"].Reference != info.Reference {
		t.Fatalf("List = %v, %v; want c1", list, err)
	}
	if err := s.Delete(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := objects.Stat(ctx, "checkpoints/c1.nibsparse"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the object outlived its checkpoint: %v", err)
	}
	if _, err := os.Stat(s.LocalPath("c1")); !os.IsNotExist(err) {
		t.Error("the local copy outlived its checkpoint")
	}
	if list, _ := s.List(ctx); len(list) != 0 {
		t.Errorf("List after Delete = %v", list)
	}
}

func TestACheckpointLandsInS3AndItsObjectRestoresTheVolume(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "ckpt")
	objects, err := store.NewS3(context.Background(), "s3://ckpt/host-1")
	if err != nil {
		t.Fatal(err)
	}
	objects.SetPartSize(5 << 20)
	dir := t.TempDir()
	ctx := context.Background()
	s, err := Open(ctx, Options{Dir: filepath.Join(dir, "ckpt"), Objects: objects, Prefix: "checkpoints/"})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 256<<20, 4<<20, 0, 100<<20, 200<<20)
	info, err := s.Create(ctx, "c1", Volume{ID: "v", Path: src})
	if err != nil {
		t.Fatal(err)
	}
	if info.Reference != "s3://ckpt/host-1/checkpoints/c1.nibsparse" {
		t.Errorf("reference %q", info.Reference)
	}
	st, err := srv.Client.StatObject(ctx, "ckpt", "host-1/checkpoints/c1.nibsparse", minio.StatObjectOptions{})
	if err != nil || st.Size > 13<<20 {
		t.Fatalf("the object of a 256 MiB volume holding 12 MiB is %d bytes: %v", st.Size, err)
	}
	r, _, err := objects.Get(ctx, "checkpoints/c1.nibsparse")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	back := filepath.Join(dir, "back")
	if _, err := ReadSparse(r, back); err != nil || digest(t, back) != digest(t, src) {
		t.Fatalf("the object does not restore the volume: %v", err)
	}
}

func TestACopyOfAVolumeAtRestWhoseGuestStartedDuringItFailsAndLeavesNoCopy(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "vol"), filepath.Join(dir, "copy")
	testenv.SparseFile(t, src, 1<<20, 4096, 0)
	started := func(context.Context) error { return errors.New("app a's guest started during the copy") }
	_, err := Snapshot(context.Background(), Volume{ID: "v", Path: src, AtRest: started}, dst, time.Second)
	if err == nil || !strings.Contains(err.Error(), "started during the copy") {
		t.Fatalf("Snapshot = %v, want the copy refused", err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Error("a torn copy was left")
	}
}

// exclusive refuses a second freeze while one holds, as FIFREEZE does.
type exclusive struct {
	mu     sync.Mutex
	frozen bool
}

func (e *exclusive) Freeze(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.frozen {
		return errors.New("device or resource busy")
	}
	e.frozen = true
	return nil
}

func (e *exclusive) Thaw(context.Context) error {
	e.mu.Lock()
	e.frozen = false
	e.mu.Unlock()
	return nil
}

func TestSnapshotsOfOneVolumeTakeTurnsSoNoneThawsAnothersFreeze(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "vol")
	testenv.SparseFile(t, src, 32<<20, 1<<20, 0, 8<<20, 16<<20, 31<<20)
	f := &exclusive{}
	errs := make(chan error, 4)
	for i := range 4 {
		go func() {
			_, err := Snapshot(context.Background(), Volume{ID: "v", Path: src, Freezer: f}, filepath.Join(dir, fmt.Sprint("copy", i)), 5*time.Second)
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("a snapshot beside others failed: %v", err)
		}
	}
}

func TestOpenAbortsTheUploadADeadDaemonLeftButNotAnotherHostsUnderTheSamePrefix(t *testing.T) {
	srv := s3test.Start(t)
	srv.SetEnv(t)
	srv.Bucket(t, "ckpt")
	ctx := context.Background()
	objects, err := store.NewS3(ctx, "s3://ckpt/fleet")
	if err != nil {
		t.Fatal(err)
	}
	core := minio.Core{Client: srv.Client}
	for _, key := range []string{"fleet/checkpoints/c1.nibsparse", "fleet/checkpoints/other-host-c1.nibsparse"} {
		if _, err := core.NewMultipartUpload(ctx, "ckpt", key, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	// What a daemon killed mid-upload leaves: its note of the key.
	if err := os.WriteFile(filepath.Join(dir, ".uploading-c1-abc"), []byte("checkpoints/c1.nibsparse"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, Options{Dir: dir, Objects: objects, Prefix: "checkpoints/"}); err != nil {
		t.Fatal(err)
	}
	var left []string
	for u := range srv.Client.ListIncompleteUploads(ctx, "ckpt", "", true) {
		left = append(left, u.Key)
	}
	if len(left) != 1 || left[0] != "fleet/checkpoints/other-host-c1.nibsparse" {
		t.Errorf("incomplete uploads after Open: %v; want only the other host's", left)
	}
	if notes, _ := filepath.Glob(filepath.Join(dir, ".uploading-*")); len(notes) != 0 {
		t.Errorf("notes left: %v", notes)
	}
}
