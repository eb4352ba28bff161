package candid

import (
	"testing"

	"alpnib.dev/ic/principal"
)

// Benchmarks on the shared workloads; numbers and the command are in
// docs/bench.md.

func BenchmarkDecodeProposalInfo(b *testing.B) {
	data := workload(b, "proposal_info.hex")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var info proposalInfo
		if err := Unmarshal(data, &info); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeProposalInfo(b *testing.B) {
	var info proposalInfo
	if err := Unmarshal(workload(b, "proposal_info.hex"), &info); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(info); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodePrincipals(b *testing.B) {
	data := workload(b, "principals.hex")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var ps []principal.Principal
		if err := Unmarshal(data, &ps); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePrincipals(b *testing.B) {
	var ps []principal.Principal
	if err := Unmarshal(workload(b, "principals.hex"), &ps); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Marshal(ps); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeValuesProposalInfo(b *testing.B) {
	data := workload(b, "proposal_info.hex")
	ts, _, err := Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeValues(data, ts); err != nil {
			b.Fatal(err)
		}
	}
}
