package volume

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/internal/testenv"
)

// mostlyZeros is size bytes of zeros but for random data of length n at
// each offset.
func mostlyZeros(size, n int, offsets ...int) []byte {
	b := make([]byte, size)
	for _, off := range offsets {
		rand.Read(b[off : off+n])
	}
	return b
}

func TestRunsOfZerosInAPlainTarOrZipEntryAreRestoredAsHoles(t *testing.T) {
	body := string(mostlyZeros(16<<20+100, 1<<20, 4<<20+12345))
	for name, archive := range map[string][]byte{
		"tar":    tarOf(t, file("big", body, 0o640), file("zeros", string(make([]byte, 8<<20+5)), 0o600)),
		"tar.gz": gzipOf(t, tarOf(t, file("big", body, 0o640), file("zeros", string(make([]byte, 8<<20+5)), 0o600))),
		"zip":    zipOf(t, file("big", body, 0o640), file("zeros", string(make([]byte, 8<<20+5)), 0o600)),
	} {
		t.Run(name, func(t *testing.T) {
			dest, _, err := unpackBytes(t, archive, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(filepath.Join(dest, "big"))
			if !bytes.Equal(got, []byte(body)) {
				t.Fatalf("big was restored as %d other bytes, want its %d", len(got), len(body))
			}
			// The 1 MiB of data touches 17 chunks of 64 KiB.
			if a := testenv.Allocated(t, filepath.Join(dest, "big")); a > 1<<20+2*holeChunk {
				t.Errorf("big (16 MiB holding 1 MiB) takes %d bytes on disk", a)
			}
			zeros, _ := os.Stat(filepath.Join(dest, "zeros"))
			if a := testenv.Allocated(t, filepath.Join(dest, "zeros")); zeros.Size() != 8<<20+5 || a != 0 {
				t.Errorf("zeros is %d bytes taking %d on disk; want 8 MiB + 5 taking none", zeros.Size(), a)
			}
			if zeros.Mode().Perm() != 0o600 {
				t.Errorf("zeros has mode %v, want 0600", zeros.Mode())
			}
		})
	}
}

func TestASparseFileGNUTarArchivedIsRestoredWithItsHolesWithinALimitSizedForItsData(t *testing.T) {
	gnutar := testenv.RequireCommand(t, "tar")
	src := t.TempDir()
	p := filepath.Join(src, "sparse.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(256 << 20) // ends in a hole
	data := mostlyZeros(2<<20, 2<<20, 0)
	f.WriteAt(data, 64<<20)
	f.WriteAt(data[:100], 5)
	f.Close()
	os.Chmod(p, 0o751)
	archive := filepath.Join(t.TempDir(), "a.tar.gz")
	for _, version := range []string{"1.0", "0.1", "0.0"} {
		t.Run("GNU sparse "+version, func(t *testing.T) {
			cmd := exec.Command(gnutar, "--format=posix", "--sparse", "--sparse-version="+version, "-czf", archive, "-C", src, "sparse.bin")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("tar: %v: %s", err, out)
			}
			st, _ := os.Stat(archive)
			b, _ := os.ReadFile(archive)
			dest, stats, err := unpackBytes(t, b, 8<<20)
			if err != nil {
				t.Fatalf("a 256 MiB file holding 2 MiB (archive %d bytes) does not unpack within 8 MiB: %v", st.Size(), err)
			}
			want, _ := os.ReadFile(p)
			got, _ := os.ReadFile(filepath.Join(dest, "sparse.bin"))
			if !bytes.Equal(got, want) || stats.Bytes != 256<<20 {
				t.Fatalf("restored %d other bytes (stats %d), want the file's %d", len(got), stats.Bytes, len(want))
			}
			if a := testenv.Allocated(t, filepath.Join(dest, "sparse.bin")); a > 2<<20+2*holeChunk {
				t.Errorf("the restored file takes %d bytes on disk, want about its 2 MiB of data", a)
			}
			if info, _ := os.Stat(filepath.Join(dest, "sparse.bin")); info.Mode().Perm() != 0o751 {
				t.Errorf("the restored file has mode %v, want 0751", info.Mode())
			}
		})
	}
}

func TestADenseFileLargerThanTheLimitStillDoesNotFit(t *testing.T) {
	body := string(mostlyZeros(4<<20, 4<<20, 0))
	_, stats, err := unpackBytes(t, tarOf(t, file("a", body, 0o644)), 2<<20)
	if !errors.Is(err, ErrDoesNotFit) {
		t.Fatalf("4 MiB of random data within a 2 MiB limit: error %v, want ErrDoesNotFit", err)
	}
	if stats.Bytes != 0 {
		t.Errorf("stats count %d bytes of a file that did not fit", stats.Bytes)
	}
}

func TestAnArchiveClaimingASparseFileFarLargerThanItsVolumeIsRefusedBeforeAnythingIsRead(t *testing.T) {
	archive := gnuSparseTar(t, 100<<30, 5<<30)
	if archive == nil {
		testenv.RequireCommand(t, "tar")
		t.Fatal("GNU tar could not archive a 100 GiB sparse file")
	}
	dest, _, err := unpackBytes(t, archive, 64<<20)
	if !errors.Is(err, ErrDoesNotFit) || !strings.Contains(err.Error(), `"sparse"`) {
		t.Fatalf("a 100 GiB file holding 100 bytes, within 64 MiB: error %v; want ErrDoesNotFit naming the entry", err)
	}
	if _, err := os.Lstat(filepath.Join(dest, "sparse")); !os.IsNotExist(err) {
		t.Errorf("the refused file was created: %v", err)
	}
}

// gnuSparseTar is a tar GNU tar wrote (format posix, sparse version 1.0)
// of one file, "sparse", of size bytes with 100 bytes of data at off, or
// nil when GNU tar is not installed.
func gnuSparseTar(t testing.TB, size, off int64) []byte {
	gnutar, err := exec.LookPath("tar")
	if err != nil {
		return nil
	}
	dir, err := os.MkdirTemp("", "sparse-seed-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		return nil
	}
	f.Truncate(size)
	f.WriteAt(bytes.Repeat([]byte("x"), 100), off)
	f.Close()
	out, err := exec.Command(gnutar, "--format=posix", "--sparse", "--sparse-version=1.0", "-cf", "-", "-C", dir, "sparse").Output()
	if err != nil {
		return nil
	}
	return out
}

func TestTheHolesAnUnpackWillReadAre64TimesTheLimitButNeverMoreThan256GiBBeyondIt(t *testing.T) {
	for _, c := range []struct {
		limit, want int64
	}{
		{64 << 20, 4 << 30},                // a small volume: 64 times its size
		{4 << 30, 256 << 30},               // 64 times is 256 GiB, and so is 256 GiB beyond
		{100 << 30, (100 << 30) + 256<<30}, // 64 times would be 6.4 TiB of zeros to read
	} {
		if got := logicalCap(c.limit); got != c.want {
			t.Errorf("limit %d: the files may sum to %d bytes, want %d", c.limit, got, c.want)
		}
	}
}
