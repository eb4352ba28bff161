package qemu

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"alpnib.dev/nibrunner/store"
)

// The daemon's side of a snapshot's travel (Travel) finds none where none
// was sent, and forgets one whole: its stamp and state go, and forgetting
// it again is not an error.
func TestTravelFindsNoSnapshotWhereNoneWasSentAndForgetsOneWhole(t *testing.T) {
	ctx := context.Background()
	st, err := store.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tr := Travel{VMM: &VMM{}, Checkpoints: st, Artifacts: st}
	const key = "checkpoints/a/c1.nibsparse"
	if dep, n, err := tr.Fetch(ctx, "blog", key); dep != "" || n != 0 || err != nil {
		t.Fatalf("Fetch with nothing beside %s = %q, %d, %v; want none, no error", key, dep, n, err)
	}
	for _, name := range []string{TravelStateObject, TravelStampObject} {
		b := []byte(name)
		if err := st.Put(ctx, TravelPrefix(key)+name, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := tr.Forget(ctx, key); err != nil {
			t.Fatalf("Forget: %v", err)
		}
	}
	for _, name := range []string{TravelStateObject, TravelStampObject} {
		if _, err := st.Stat(ctx, TravelPrefix(key)+name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after Forget, %s is still there (%v)", name, err)
		}
	}
}
