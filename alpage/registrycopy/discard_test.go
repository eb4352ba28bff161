package registrycopy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The damage verdict is taken outside the lock, the discard inside it:
// run B, which saw the same damaged file as run A, discards A's new copy.
func TestARunThatFoundTheFileDamagedDoesNotDiscardTheCopyAnotherRunRebuilt(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("this is not a SQLite database, not even close to one......................................................"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errA := Open(dir) // run A: damaged
	_, errB := Open(dir) // run B: damaged, same file
	if !damaged(errA) || !damaged(errB) {
		t.Fatalf("want both damaged: %v / %v", errA, errB)
	}
	a, why, err := discardAndOpen(dir) // A rebuilds...
	if err != nil || why == nil {
		t.Fatalf("run A: %v, damage %v; want the damaged file discarded", err, why)
	}
	defer a.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '7' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	b, why, err := discardAndOpen(dir) // ...and B must open it, not discard it
	if err != nil || why != nil {
		t.Fatalf("run B: %v, damage %v; want A's copy opened", err, why)
	}
	defer b.Close()
	if _, err := a.db.Exec(`UPDATE meta SET value = '9' WHERE name = 'version'`); err != nil {
		t.Fatal(err)
	}
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, _ := c.Version(context.Background())
	if v != 9 {
		t.Fatalf("the copy on disk is at version %d; run A wrote 9 to a file run B deleted", v)
	}
}
