package testenv

import (
	"crypto/rand"
	"os"
	"syscall"
	"testing"
)

// SparseFile makes a file at path of size bytes holding random data at
// each offset (run bytes each) and holes everywhere else.
func SparseFile(t testing.TB, path string, size, run int64, offsets ...int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, run)
	for _, off := range offsets {
		rand.Read(buf)
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatal(err)
		}
	}
}

// Allocated is the disk the file at path takes, in bytes.
func Allocated(t testing.TB, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}
