package flock

import (
	"os"
	"path/filepath"
	"testing"
)

func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestAnExclusiveLockShutsOutEveryOtherUntilItsFileCloses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, b := open(t, path), open(t, path)
	if held, err := Try(a, Exclusive); !held || err != nil {
		t.Fatalf("first exclusive: %v %v", held, err)
	}
	for _, how := range []int{Shared, Exclusive} {
		if held, err := Try(b, how); held || err != nil {
			t.Fatalf("lock %d beside an exclusive one: held %v, %v; want not held and no error", how, held, err)
		}
	}
	a.Close()
	if held, err := Try(b, Exclusive); !held || err != nil {
		t.Fatalf("after the holder closed: %v %v", held, err)
	}
}

func TestSharedLocksShareAndShutOutAnExclusiveOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	a, b, c := open(t, path), open(t, path), open(t, path)
	for _, f := range []*os.File{a, b} {
		if held, err := Try(f, Shared); !held || err != nil {
			t.Fatalf("shared: %v %v", held, err)
		}
	}
	if held, err := Try(c, Exclusive); held || err != nil {
		t.Fatalf("exclusive beside shared ones: %v %v", held, err)
	}
}

func TestALockOnAClosedFileIsAnErrorNotHeldByAnother(t *testing.T) {
	f := open(t, filepath.Join(t.TempDir(), "lock"))
	f.Close()
	if held, err := Try(f, Exclusive); held || err == nil {
		t.Fatalf("a closed file: %v %v", held, err)
	}
}
