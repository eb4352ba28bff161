package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadRecordsReadsEveryRecordByIdAndSkipsHalfWrittenOnes(t *testing.T) {
	dir := t.TempDir()
	type rec struct{ N int }
	if err := WriteFile(filepath.Join(dir, "a.json"), []byte(`{"N":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "torn.json"), []byte(`{"N":`), 0o600)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(`{"N":3}`), 0o600)
	got, err := ReadRecords[rec](dir, "things")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["a"].N != 1 {
		t.Fatalf("got %+v, want only a = 1", got)
	}
	if got, err := ReadRecords[rec](filepath.Join(dir, "none"), "things"); err != nil || len(got) != 0 {
		t.Fatalf("a missing folder gave %+v, %v; want no records and no error", got, err)
	}
}
