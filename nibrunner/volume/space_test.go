package volume

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFreeBytesIsTheDisksFreeSpaceEvenBeforeTheFolderIsMade(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "not", "made", "yet")} {
		got, err := Files{Dir: d}.FreeBytes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Other tests write meanwhile: the same disk, within 64 MiB.
		want := st.Bavail * uint64(st.Bsize)
		if got == 0 || max(got, want)-min(got, want) > 64<<20 {
			t.Errorf("free space of %s: %d, statfs says %d", d, got, want)
		}
	}
}

func TestAListedVolumeSaysWhatItHoldsOnDisk(t *testing.T) {
	dir := t.TempDir()
	f := Files{Dir: dir}
	if _, err := f.Converge(context.Background(), Spec{VolumeID: "a", SizeBytes: 16 << 20, State: Present}); err != nil {
		t.Fatal(err)
	}
	vols, err := f.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v := vols["a"]; v.SizeBytes != 16<<20 || v.AllocatedBytes > 64<<10 {
		t.Fatalf("a sparse new volume: %+v, want 16 MiB holding (almost) nothing", v)
	}
	fh, err := os.OpenFile(f.Path("a"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(make([]byte, 1<<20), 4<<20); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	vols, _ = f.List(context.Background())
	if v := vols["a"]; v.AllocatedBytes < 1<<20 || v.AllocatedBytes > 2<<20 {
		t.Fatalf("after 1 MiB written: %+v, want about 1 MiB held", v)
	}
}
