package reconcile

import (
	"time"

	"alpnib.dev/alpage/state"
)

// UpdateChips applies the KDS verdicts asked during this run to the chip
// cache of state.json and reports whether it changed. Only positive
// verdicts are kept, and kept forever; a refusal drops an entry (it is
// only asked again with --refresh-chips); an inconclusive answer changes
// nothing, so a rate-limited KDS never undoes an earlier verdict.
func UpdateChips(st *state.State, chips map[string]ChipFacts, now time.Time) bool {
	changed := false
	for hexID, c := range chips {
		switch {
		case c.Asked == nil || c.Asked.Inconclusive:
		case c.Asked.Verified:
			if st.Chips == nil {
				st.Chips = map[string]*state.Chip{}
			}
			old := st.Chips[hexID]
			if old == nil || !old.Verified || old.Product != c.Asked.Product {
				st.Chips[hexID] = &state.Chip{Verified: true, Product: c.Asked.Product, VerifiedAt: state.TimeOf(now)}
				changed = true
			}
		case c.Asked.Refused:
			if _, ok := st.Chips[hexID]; ok {
				delete(st.Chips, hexID)
				changed = true
			}
		}
	}
	return changed
}
