package candid

import (
	"errors"
	"strings"
	"testing"

	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/internal/memtest"
)

// Recursive Go types for nesting attacks.
type (
	nestedOpt  *nestedOpt
	nestedVecs []nestedVecs
)

func leb(v uint64) string { return string(leb128.AppendUnsigned(nil, v)) }

// hostileInputs are messages built to make a careless decoder allocate by a
// declared length, loop for a declared count, or recurse without end.
func hostileInputs() []struct {
	name   string
	data   []byte
	expect []*Type
	target func() any // a Go value to Unmarshal into
	kind   error
} {
	fixVec := Placeholder()
	_ = fixVec.Define(Vec(fixVec))
	tree := "DIDL\x17\x6c\x02\x01\x7f\x02\x7f"
	for i := 0; i < 0x14; i++ {
		tree += "\x6c\x02\x00" + string(rune(i)) + "\x01" + string(rune(i))
	}
	tree += "\x6e\x14\x6d\x15\x01\x16\x05\x01\x01\x01\x01\x01"
	return []struct {
		name   string
		data   []byte
		expect []*Type
		target func() any
		kind   error
	}{
		{"blob declaring 2^60 bytes", []byte("DIDL\x01\x6d\x7b\x01\x00" + leb(1<<60) + "abcd"), types(Vec(Nat8())), func() any { return new([]byte) }, ErrTruncated},
		{"vec nat64 declaring 2^40 elements", []byte("DIDL\x01\x6d\x78\x01\x00" + leb(1<<40) + "abcdefgh"), types(Vec(Nat64())), func() any { return new([]uint64) }, ErrTruncated},
		{"text declaring 2^40 bytes", []byte("DIDL\x00\x01\x71" + leb(1<<40) + "abc"), types(Text()), func() any { return new(string) }, ErrTruncated},
		{"type table declaring 2^40 entries", []byte("DIDL" + leb(1<<40) + "\x6e\x7f"), nil, func() any { return new(string) }, ErrTruncated},
		{"record declaring 2^40 fields", []byte("DIDL\x01\x6c" + leb(1<<40) + "\x00\x7f\x01\x00"), nil, func() any { return new(struct{}) }, ErrTruncated},
		{"argument list of 2^50 types", []byte("DIDL\x00" + leb(1<<50) + "\x7f\x7f"), nil, func() any { return new(Unit) }, ErrTruncated},
		{"vec null of 2^60 elements", []byte("DIDL\x01\x6d\x7f\x01\x00" + leb(1<<60)), types(Vec(Null())), func() any { return new([]Unit) }, ErrBudget},
		{"vec reserved of a billion elements", []byte("DIDL\x01\x6d\x70\x01\x00\x80\x94\xeb\xdc\x03"), types(Vec(Reserved())), func() any { return new([]*uint64) }, ErrBudget},
		{"vec vec null, five times a million", []byte("DIDL\x02\x6d\x01\x6d\x7f\x01\x00\x05" + strings.Repeat("\xff\xff\x3f", 5)), types(Vec(Vec(Null()))), func() any { return new([][]Unit) }, ErrBudget},
		{"2^20 nulls in a binary tree of records", []byte(tree), types(Vec(Opt(Record()))), func() any { return new([]*struct{}) }, ErrBudget},
		{"opt nested 100000 deep", []byte("DIDL\x01\x6e\x00\x01\x00" + strings.Repeat("\x01", 100000) + "\x00"), types(fixOpt()), func() any { return new(nestedOpt) }, ErrTooDeep},
		{"vec nested 100000 deep", []byte("DIDL\x01\x6d\x00\x01\x00" + strings.Repeat("\x01", 100000) + "\x00"), types(fixVec), func() any { return new(nestedVecs) }, ErrTooDeep},
		{"principal of 2^40 bytes", []byte("DIDL\x00\x01\x68\x01" + leb(1<<40) + "ab"), types(Principal()), func() any { return new([]byte) }, ErrTruncated},
	}
}

func TestHostileInputsFailFastWithADecodeErrorAndLittleMemory(t *testing.T) {
	for _, c := range hostileInputs() {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, err error) {
				t.Helper()
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("%s: error %v is not a *DecodeError", what, err)
				}
				if de.Offset < 0 || de.Offset > len(c.data) {
					t.Errorf("%s: offset %d outside the %d-byte message", what, de.Offset, len(c.data))
				}
				if !errors.Is(err, c.kind) && !errors.Is(err, ErrSubtype) {
					t.Errorf("%s: error %v, want %v", what, err, c.kind)
				}
			}
			allocated := memtest.Allocated(func() {
				_, _, err := Decode(c.data)
				check("Decode", err)
				if c.expect != nil {
					_, err = DecodeValues(c.data, c.expect)
					check("DecodeValues", err)
				}
				check("Unmarshal", Unmarshal(c.data, c.target()))
			})
			// A few MiB at most, whatever the message claims: the budget
			// caps zero-sized elements, byte counts are checked first.
			t.Logf("%d bytes allocated", allocated)
			if allocated > 4<<20 {
				t.Errorf("decoding allocated %d bytes", allocated)
			}
		})
	}
}

func TestALengthBombCostsAConstantNumberOfAllocations(t *testing.T) {
	for _, c := range hostileInputs()[:7] {
		allocs := testing.AllocsPerRun(20, func() {
			_ = Unmarshal(c.data, c.target())
		})
		if allocs > 30 {
			t.Errorf("%s: %v allocations per decode", c.name, allocs)
		}
	}
}

func TestManyReferencesToAHugeFuncTypeCheckTheTypeOnce(t *testing.T) {
	// func (nat, nat, … 20000 times) -> (); a vec of 20000 references.
	const n = 20000
	msg := "DIDL\x02\x6a" + leb(n) + strings.Repeat("\x7d", n) + "\x00\x00\x6d\x00\x01\x01" + leb(n) +
		strings.Repeat("\x01\x01\x01\xaa\x01m", n)
	expected := Vec(Func(repeatType(Nat(), n), nil))
	var checks int
	before := subtypeChecks.Load()
	allocated := memtest.Allocated(func() {
		vals, err := DecodeValues([]byte(msg), types(expected))
		if err != nil {
			t.Fatal(err)
		}
		checks = len(vals[0].Elems)
	})
	if checks != n {
		t.Fatalf("decoded %d references, want %d", checks, n)
	}
	if c := subtypeChecks.Load() - before; c != 1 {
		t.Errorf("the func type was checked %d times, want once", c)
	}
	// Checking the type per reference would allocate a subtype memo of n
	// pairs each time: gigabytes. Once is a few MiB for the values.
	if allocated > 64<<20 {
		t.Fatalf("decoding allocated %d bytes", allocated)
	}
}

func repeatType(t *Type, n int) []*Type {
	ts := make([]*Type, n)
	for i := range ts {
		ts[i] = t
	}
	return ts
}
