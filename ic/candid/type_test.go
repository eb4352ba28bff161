package candid

import (
	"strings"
	"testing"
)

func TestStringOfAHeavilySharedTypeIsShortAndFast(t *testing.T) {
	// 64 levels of record { a : T; b : T }: 2^64 leaves if printed in full.
	typ := Null()
	for i := 0; i < 64; i++ {
		typ = Record(NamedField("a", typ), NamedField("b", typ))
	}
	if s := typ.String(); len(s) > 4*maxTypeString || !strings.Contains(s, "…") {
		t.Fatalf("String gave %d bytes: %.80s…", len(s), s)
	}
}

func TestStringNamesARecursiveTypeOnce(t *testing.T) {
	got := listType().String()
	want := "μ0.opt record { head : int; tail : μ0 }"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestFieldHashMatchesTheSpecification(t *testing.T) {
	// Known ids from the Candid specification and the suite.
	for name, id := range map[string]uint32{"foo": 5097222, "bar": 4895187, "": 0, "head": 1158359328, "tail": 1291237008} {
		if got := FieldHash(name); got != id {
			t.Errorf("FieldHash(%q) = %d, want %d", name, got, id)
		}
	}
}
