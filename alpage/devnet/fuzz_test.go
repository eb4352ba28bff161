package devnet

import (
	"testing"

	"alpnib.dev/ic/localnet/governance"
	"alpnib.dev/ic/localnet/registry"
	"alpnib.dev/ic/principal"
)

// FuzzParseFleet feeds arbitrary documents to the fleet parser: it must
// refuse or accept, never panic, and every fleet it accepts must seed a
// registry and governance without error — the checks in ParseFleet are
// what the seeding relies on.
func FuzzParseFleet(f *testing.F) {
	f.Add(DefaultFleet)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"nodes":[{"id":"aaaaa-aa","operator":"aaaaa-aa","chip_id":"zz"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := ParseFleet(data)
		if err != nil {
			return
		}
		d := &Devnet{Registry: registry.New(), Governance: governance.New(governance.Config{}, nil), Identity: principal.SelfAuthenticating([]byte("me"))}
		if _, err := d.seed(fl, nil); err != nil {
			t.Fatalf("an accepted fleet does not seed: %v", err)
		}
	})
}
