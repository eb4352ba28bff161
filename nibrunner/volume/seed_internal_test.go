package volume

import (
	"os"
	"testing"
	"time"
)

func TestASeedKilledWhileFetchingIsFoundWithWhatItHadWritten(t *testing.T) {
	l := &Local{Dir: t.TempDir()}
	began := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	// What a daemon killed halfway through a fetch leaves: the note written
	// when it began, and the part it had fetched.
	if err := l.writeSeedState("v", seedState{Digest: "d1", StartedAt: began}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.seedPartPath("v"), make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := l.earlierSeed("v", "d1")
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || e.Resumed || e.Fetched != 5000 || !e.StartedAt.Equal(began) {
		t.Fatalf("earlier = %+v; want the attempt begun at %v, 5000 bytes fetched, not resumable", e, began)
	}
	if _, err := os.Stat(l.seedPartPath("v")); !os.IsNotExist(err) {
		t.Fatalf("the part is kept: %v", err)
	}

	// A note of another digest is another document's seed: nothing earlier.
	if err := l.writeSeedState("w", seedState{Digest: "old", StartedAt: began, Fetched: 9, Whole: true}); err != nil {
		t.Fatal(err)
	}
	if e, err := l.earlierSeed("w", "new"); err != nil || e != nil {
		t.Fatalf("earlier of another digest = %+v, %v; want none", e, err)
	}
	if _, err := os.Stat(l.seedStatePath("w")); !os.IsNotExist(err) {
		t.Fatalf("the other digest's note is kept: %v", err)
	}
}
