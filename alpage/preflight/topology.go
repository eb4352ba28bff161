package preflight

import (
	"context"

	"alpnib.dev/alpage/kinds"
)

// Topology reads each node's health and place at registry version (the
// version reconcile read its snapshot at, so that plan --generate weighs
// replacements against the registry state it found drift in): the same
// reads a membership proposal's preflight makes, in one place.
func (f *Fetcher) Topology(ctx context.Context, version uint64, ids []string) *kinds.Topology {
	pf := f.at(version)
	return &kinds.Topology{Health: pf.health(ctx, ids), Places: kinds.ReadPlaces(ctx, reader{pf}, ids)}
}
