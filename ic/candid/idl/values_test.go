package idl

import (
	"math"
	"math/big"
	"strings"
	"testing"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

func parseOne(t *testing.T, text string, typ *candid.Type) candid.Value {
	t.Helper()
	vs, err := ParseValues(text, []*candid.Type{typ})
	if err != nil {
		t.Fatalf("ParseValues(%s): %v", text, err)
	}
	return vs[0]
}

func TestANumberTakesTheMeaningOfItsType(t *testing.T) {
	cases := []struct {
		text string
		typ  *candid.Type
		want candid.Value
	}{
		{"(42)", candid.Nat(), candid.NatValue(big.NewInt(42))},
		{"(-42)", candid.Int(), candid.IntValue(big.NewInt(-42))},
		{"(+7)", candid.Int(), candid.IntValue(big.NewInt(7))},
		{"(1_000_000)", candid.Nat(), candid.NatValue(big.NewInt(1000000))},
		{"(0xff)", candid.Nat8(), candid.Value{Kind: candid.KindNat8, Uint: 255}},
		{"(-128)", candid.Int8(), candid.Value{Kind: candid.KindInt8, Int: -128}},
		{"(18446744073709551615)", candid.Nat64(), candid.Value{Kind: candid.KindNat64, Uint: math.MaxUint64}},
		{"(3)", candid.Float64(), candid.Value{Kind: candid.KindFloat64, Float: 3}},
		{"(0.)", candid.Float64(), candid.Value{Kind: candid.KindFloat64, Float: 0}},
		{"(-0.5)", candid.Float32(), candid.Value{Kind: candid.KindFloat32, Float: -0.5}},
		{"(1.5e3)", candid.Float64(), candid.Value{Kind: candid.KindFloat64, Float: 1500}},
		{"(0x1p-2)", candid.Float64(), candid.Value{Kind: candid.KindFloat64, Float: 0.25}},
		{"(0.1)", candid.Float32(), candid.Value{Kind: candid.KindFloat32, Float: float64(float32(0.1))}},
	}
	for _, c := range cases {
		if got := parseOne(t, c.text, c.typ); !got.Equal(c.want) {
			t.Errorf("%s at %s = %s, want %s", c.text, c.typ, got, c.want)
		}
	}
}

func TestANumberOutsideItsTypeIsRefused(t *testing.T) {
	cases := []struct {
		text string
		typ  *candid.Type
	}{
		{"(-1)", candid.Nat()},
		{"(256)", candid.Nat8()},
		{"(128)", candid.Int8()},
		{"(18446744073709551616)", candid.Nat64()},
		{"(1.5)", candid.Int()},
		{"(1e3)", candid.Nat()},
		{"(\"5\")", candid.Nat()},
		{"(5)", candid.Text()},
	}
	for _, c := range cases {
		if _, err := ParseValues(c.text, []*candid.Type{c.typ}); err == nil {
			t.Errorf("%s at %s was accepted", c.text, c.typ)
		}
	}
}

func TestARecordDropsUnknownFieldsAndFillsMissingOptionalOnes(t *testing.T) {
	typ := candid.Record(
		candid.NamedField("name", candid.Text()),
		candid.NamedField("age", candid.Opt(candid.Nat8())),
		candid.NamedField("note", candid.Null()),
	)
	got := parseOne(t, `(record { name = "ada"; extra = 5 })`, typ)
	want := candid.RecordValue(
		candid.FieldValue{ID: candid.FieldHash("name"), Value: candid.TextValue("ada")},
		candid.FieldValue{ID: candid.FieldHash("age"), Value: candid.None()},
		candid.FieldValue{ID: candid.FieldHash("note"), Value: candid.NullValue()},
	)
	if !got.Equal(want) {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := ParseValues(`(record { age = opt 3 })`, []*candid.Type{typ}); err == nil || !strings.Contains(err.Error(), "lacks field name") {
		t.Errorf("a missing required field: err = %v", err)
	}
}

func TestTupleShorthandNumbersRecordFields(t *testing.T) {
	typ := candid.Tuple(candid.Int(), candid.Bool())
	got := parseOne(t, `(record { 42; true })`, typ)
	want := candid.RecordValue(
		candid.FieldValue{ID: 0, Value: candid.IntValue(big.NewInt(42))},
		candid.FieldValue{ID: 1, Value: candid.BoolValue(true)},
	)
	if !got.Equal(want) {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestOptAcceptsNullOptAndABareValueOfItsContent(t *testing.T) {
	typ := candid.Opt(candid.Nat())
	if v := parseOne(t, "(null)", typ); !v.Equal(candid.None()) {
		t.Errorf("null = %s", v)
	}
	five := candid.Some(candid.NatValue(big.NewInt(5)))
	if v := parseOne(t, "(opt 5)", typ); !v.Equal(five) {
		t.Errorf("opt 5 = %s", v)
	}
	if v := parseOne(t, "(5)", typ); !v.Equal(five) {
		t.Errorf("5 = %s", v)
	}
	// At opt opt nat a bare null must be the outer null, never `opt null`.
	if v := parseOne(t, "(null)", candid.Opt(typ)); !v.Equal(candid.None()) {
		t.Errorf("null at opt opt nat = %s", v)
	}
}

func TestVariantsBlobsAndReferences(t *testing.T) {
	res := candid.Variant(candid.NamedField("Ok", candid.Text()), candid.NamedField("Err", candid.Null()))
	if v := parseOne(t, `(variant { Ok = "fine" })`, res); v.Fields[0].ID != candid.FieldHash("Ok") || v.Fields[0].Value.Text != "fine" {
		t.Errorf("Ok = %s", v)
	}
	if v := parseOne(t, `(variant { Err })`, res); v.Fields[0].Value.Kind != candid.KindNull {
		t.Errorf("Err = %s", v)
	}
	if _, err := ParseValues(`(variant { Other })`, []*candid.Type{res}); err == nil {
		t.Errorf("an unknown case was accepted")
	}
	if _, err := ParseValues(`(variant { Ok = "a"; Err })`, []*candid.Type{res}); err == nil {
		t.Errorf("a variant with two cases was accepted")
	}
	blob := parseOne(t, `(blob "\00\ff\41")`, candid.Vec(candid.Nat8()))
	if !blob.Equal(candid.VecValue(
		candid.Value{Kind: candid.KindNat8, Uint: 0},
		candid.Value{Kind: candid.KindNat8, Uint: 255},
		candid.Value{Kind: candid.KindNat8, Uint: 0x41})) {
		t.Errorf("blob = %s", blob)
	}
	id := principal.MustDecode("w7x7r-cok77-xa")
	if v := parseOne(t, `(principal "w7x7r-cok77-xa")`, candid.Principal()); !v.Equal(candid.PrincipalValue(id.Bytes())) {
		t.Errorf("principal = %s", v)
	}
	if _, err := ParseValues(`(principal "w7x7r-cok77-xb")`, []*candid.Type{candid.Principal()}); err == nil {
		t.Errorf("a principal with a bad checksum was accepted")
	}
	f := candid.Func(nil, nil)
	if v := parseOne(t, `(func "w7x7r-cok77-xa"."a b")`, f); v.Kind != candid.KindFunc || v.Text != "a b" {
		t.Errorf("func = %s", v)
	}
	if v := parseOne(t, `(service "aaaaa-aa")`, candid.Service()); v.Kind != candid.KindService || len(v.Bytes) != 0 {
		t.Errorf("service = %s", v)
	}
}

func TestAnnotationsMustFitTheExpectedType(t *testing.T) {
	if v := parseOne(t, "(5 : nat)", candid.Int()); !v.Equal(candid.IntValue(big.NewInt(5))) {
		t.Errorf("(5 : nat) at int = %s", v)
	}
	if _, err := ParseValues("(5 : text)", []*candid.Type{candid.Nat()}); err == nil {
		t.Errorf("a number annotated as text was accepted")
	}
	if _, err := ParseValues(`("a" : text)`, []*candid.Type{candid.Nat()}); err == nil {
		t.Errorf("a text annotation at nat was accepted")
	}
	p := mustParse(t, "type N = nat;")
	if _, err := p.ParseValues("(5 : N)", []*candid.Type{p.Types["N"]}); err != nil {
		t.Errorf("an annotation naming a program type: %v", err)
	}
}

func TestMissingArgumentsReadAsNullOnlyWhereTheTypeHasOne(t *testing.T) {
	vs, err := ParseValues("()", []*candid.Type{candid.Opt(candid.Nat()), candid.Null(), candid.Reserved()})
	if err != nil || len(vs) != 3 {
		t.Fatalf("ParseValues: %v %v", vs, err)
	}
	if _, err := ParseValues("()", []*candid.Type{candid.Nat()}); err == nil {
		t.Errorf("a missing nat argument was accepted")
	}
	if _, err := ParseValues("(1, 2)", []*candid.Type{candid.Nat()}); err == nil {
		t.Errorf("a surplus argument was accepted")
	}
}

func TestTextValuesMustBeUnicode(t *testing.T) {
	if _, err := ParseValues(`("\ff")`, []*candid.Type{candid.Text()}); err == nil {
		t.Errorf("a text with a lone \\ff byte was accepted")
	}
	if v := parseOne(t, `("\u{2603}\t")`, candid.Text()); v.Text != "☃\t" {
		t.Errorf("escapes read as %q", v.Text)
	}
}

func TestAnAnnotationNarrowerThanTheTypeIsRefused(t *testing.T) {
	if _, err := ParseValues("(5 : nat8)", []*candid.Type{candid.Nat()}); err == nil {
		t.Errorf("(5 : nat8) at nat was accepted, but nat8 is not a subtype of nat")
	}
}

func TestNestedAnnotationsCostLinearNotExponentialTime(t *testing.T) {
	const depth = 400
	text := "(" + strings.Repeat("(", depth) + "5" + strings.Repeat(" : nat)", depth) + ")"
	vs, err := ParseValues(text, []*candid.Type{candid.Int()})
	if err != nil || !vs[0].Equal(candid.IntValue(big.NewInt(5))) {
		t.Fatalf("ParseValues = %v, %v", vs, err)
	}
}
