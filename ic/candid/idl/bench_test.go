package idl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"alpnib.dev/ic/candid"
)

// BenchmarkParseManagementDid parses and checks the management canister's
// interface from the official did/ folder (≈4 KB, 40 types and methods).
func BenchmarkParseManagementDid(b *testing.B) {
	dir := os.Getenv("CANDID_DID_DIR")
	if dir == "" {
		dir = "../../../../shared/conformance/candid/did"
	}
	src, err := os.ReadFile(filepath.Join(dir, "management.did"))
	if err != nil {
		b.Skipf("management.did not found: %v", err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("management.did", src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseValues reads a record of 100 principals and numbers, the
// shape of an NNS payload written by hand.
func BenchmarkParseValues(b *testing.B) {
	typ := candid.Record(
		candid.NamedField("ids", candid.Vec(candid.Principal())),
		candid.NamedField("amounts", candid.Vec(candid.Nat64())),
		candid.NamedField("memo", candid.Opt(candid.Text())),
	)
	var sb strings.Builder
	sb.WriteString(`(record { ids = vec {`)
	for range 100 {
		sb.WriteString(` principal "w7x7r-cok77-xa";`)
	}
	sb.WriteString(`}; amounts = vec {`)
	for i := range 100 {
		sb.WriteString(" 1_000_" + strings.Repeat("0", i%10+1) + ";")
	}
	sb.WriteString(`}; memo = opt "hello" })`)
	text := sb.String()
	types := []*candid.Type{typ}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseValues(text, types); err != nil {
			b.Fatal(err)
		}
	}
}
