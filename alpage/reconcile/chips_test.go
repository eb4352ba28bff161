package reconcile

import (
	"testing"
	"time"

	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
)

func TestACertificateForAnotherChipDropsTheCachedVerdict(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	st := state.New()
	st.Chips = map[string]*state.Chip{"aa": {Verified: true, Product: "Milan-B0", VerifiedAt: state.TimeOf(now)}, "bb": {Verified: true, Product: "Genoa-B1", VerifiedAt: state.TimeOf(now)}}
	asked := map[string]ChipFacts{
		"aa": {Cached: true, Product: "Milan-B0", Asked: &source.Verdict{Refused: true, Reason: "the Milan certificate KDS served names another chip"}},
		"bb": {Cached: true, Product: "Genoa-B1", Asked: &source.Verdict{Inconclusive: true, Reason: "HTTP 429"}},
	}
	if !UpdateChips(st, asked, now.Add(time.Hour)) || st.Chips["aa"] != nil {
		t.Fatalf("the refused chip is still cached: %+v", st.Chips)
	}
	if st.Chips["bb"] == nil {
		t.Fatal("an inconclusive answer dropped a cached verdict")
	}
}
