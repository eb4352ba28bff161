package nns

import (
	"encoding/hex"
	"slices"
	"testing"
)

// Vectors encoded by protoc 3.21.12 (Debian protobuf-compiler), not by this
// project: `protoc --encode=future.SubnetRecord future.proto < full.txt`
// and `< known.txt` in testdata/future. future.proto is a subnet record as
// a registry newer than alp's view could store it: ResourceLimits 1-4 as
// dfinity/ic PR #10882 defines them, and made-up later fields in the
// record (40), its features (12) and its resource_limits (5).
const (
	futureFullHex  = "4a28653364313031623232616533666130326163613733376639666239366363366334636138336163337801ba010418016001920213088080808080201000188090dfc04a20282807c2020178"
	futureKnownHex = "4a2865336431303162323261653366613032616361373337663966623936636336633463613833616333780192020f08808080808020188090dfc04a2028"
)

func decodeHex(t *testing.T, h string) *SubnetRecordPB {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	var rec SubnetRecordPB
	if err := rec.Unmarshal(b); err != nil {
		t.Fatal(err)
	}
	return &rec
}

func TestTheQueryLimitsDecodeFromProtocBytes(t *testing.T) {
	rec := decodeHex(t, futureKnownHex)
	l := rec.ResourceLimits
	if l == nil || l.MaximumStateSize == nil || *l.MaximumStateSize != 1<<40 || l.MaximumStateDelta != nil ||
		l.MaximumQueryInstructions == nil || *l.MaximumQueryInstructions != 20_000_000_000 ||
		l.MaximumQueryWalltimeSeconds == nil || *l.MaximumQueryWalltimeSeconds != 40 {
		t.Fatalf("resource_limits %+v", l)
	}
	if um := rec.Unmodelled(); len(um.Record)+len(um.Features)+len(um.ResourceLimits) != 0 {
		t.Fatalf("a record of known fields only has unmodelled fields %+v", um)
	}
}

func TestFieldsTheViewDoesNotNameAreListedByNumberAndGoWhenTheirBlockIsReplaced(t *testing.T) {
	rec := decodeHex(t, futureFullHex)
	um := rec.Unmodelled()
	num := func(fs []Field) []int32 {
		var out []int32
		for _, f := range fs {
			out = append(out, f.Number)
		}
		return out
	}
	if !slices.Equal(num(um.Record), []int32{40}) || !slices.Equal(num(um.Features), []int32{12}) || !slices.Equal(num(um.ResourceLimits), []int32{5}) {
		t.Fatalf("unmodelled %+v, want record 40, features 12, resource_limits 5", um)
	}
	if got := um.ResourceLimits[0].String(); got != "field 5" {
		t.Errorf("an unknown field reads %q", got)
	}
	// Re-encoding keeps them all; replacing resource_limits whole (what
	// update_subnet does) drops its field 5 and nothing else.
	if again := decodeHex(t, hex.EncodeToString(rec.Marshal())).Unmodelled(); !slices.Equal(num(again.ResourceLimits), []int32{5}) {
		t.Fatalf("re-encoded: %+v", again)
	}
	rec.ReplaceResourceLimits(&ResourceLimitsRecord{MaximumQueryInstructions: rec.ResourceLimits.MaximumQueryInstructions})
	after := decodeHex(t, hex.EncodeToString(rec.Marshal()))
	if um := after.Unmodelled(); len(um.ResourceLimits) != 0 || !slices.Equal(num(um.Features), []int32{12}) || !slices.Equal(num(um.Record), []int32{40}) {
		t.Fatalf("after replacing resource_limits: %+v", um)
	}
	if l := after.ResourceLimits; l.MaximumStateSize != nil || *l.MaximumQueryInstructions != 20_000_000_000 {
		t.Fatalf("resource_limits after replacing: %+v", l)
	}
	after.ReplaceFeatures(&SubnetFeaturesRecord{HTTPRequests: true})
	if um := decodeHex(t, hex.EncodeToString(after.Marshal())).Unmodelled(); len(um.Features) != 0 || !slices.Equal(num(um.Record), []int32{40}) {
		t.Fatalf("after replacing features: %+v", um)
	}
}
