package devnet

import (
	"context"
	"testing"
)

func TestADevnetWithAHistoryStartsAtThatRegistryVersion(t *testing.T) {
	f, err := ParseFleet(DefaultFleet)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), Options{Fleet: f, Dir: t.TempDir(), History: 5000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if v := d.Registry.Version(); v != 5000 {
		t.Fatalf("registry version %d, want 5000", v)
	}
}
