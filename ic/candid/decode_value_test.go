package candid

import (
	"errors"
	"testing"
)

// listType is `type List = opt record { head : int; tail : List }`.
func listType() *Type {
	l := Placeholder()
	if err := l.Define(Opt(Record(NamedField("head", Int()), NamedField("tail", l)))); err != nil {
		panic(err)
	}
	return l
}

func fixOpt() *Type {
	o := Placeholder()
	_ = o.Define(Opt(o))
	return o
}

func TestDecodeValuesFollowsTheConformanceCases(t *testing.T) {
	variantList := Placeholder()
	_ = variantList.Define(Variant(NamedField("nil", Null()), NamedField("cons", Record(NamedField("head", Int()), NamedField("tail", variantList)))))
	cases := []struct {
		name string
		in   string
		ts   []*Type
		want []Value // nil: only success asserted
		bad  bool
	}{
		{name: "empty", in: "", bad: true},
		{name: "overlong table length", in: `DIDL\80\00\00`, want: vals()},
		{name: "nullary too long", in: `DIDL\00\00\00`, bad: true},
		{name: "extra args ignored", in: `DIDL\00\01\7f`, want: vals()},
		{name: "not primitive arg", in: `DIDL\00\01\6e`, bad: true},
		{name: "missing nat", in: `DIDL\00\00`, ts: types(Nat()), bad: true},
		{name: "missing opt", in: `DIDL\00\00`, ts: types(Opt(Nat())), want: vals(None())},
		{name: "nat big", in: `DIDL\00\01\7d\80\80\98\f4\e9\b5\ca\6a`, ts: types(Nat()), want: vals(natV(60000000000000000))},
		{name: "int negative big", in: `DIDL\00\01\7c\80\80\e8\8b\96\ca\b5\95\7f`, ts: types(Int()), want: vals(intV(-60000000000000000))},
		{name: "int overlong ones", in: `DIDL\00\01\7c\ff\7f`, ts: types(Int()), want: vals(intV(-1))},
		{name: "nat <: int", in: `DIDL\00\01\7d\80\01`, ts: types(Int()), want: vals(intV(128))},
		{name: "nat leb too short", in: `DIDL\00\01\7d\80`, ts: types(Nat()), bad: true},
		{name: "text invalid utf8", in: `DIDL\00\01\71\03\e2\28\a1`, ts: types(Text()), bad: true},
		{name: "text overlong length", in: `DIDL\00\01\71\86\00Motoko`, ts: types(Text()), want: vals(TextValue("Motoko"))},
		{name: "reserved from text", in: `DIDL\00\01\71\06Motoko`, ts: types(Reserved()), want: vals(ReservedValue())},
		{name: "reserved from bad text", in: `DIDL\00\01\71\05Motoko`, ts: types(Reserved()), bad: true},
		{name: "cannot decode empty", in: `DIDL\00\01\6f`, ts: types(Empty()), bad: true},
		{name: "opt nested", in: `DIDL\02\6e\01\6e\7c\01\00\01\01\2a`, ts: types(Opt(Opt(Int()))), want: vals(Some(Some(intV(42))))},
		{name: "opt recursion", in: `DIDL\01\6e\00\01\00\01\01\00`, ts: types(fixOpt()), want: vals(Some(Some(None())))},
		{name: "bool at fix opt fails", in: `DIDL\00\01\7e\01`, ts: types(fixOpt()), bad: true},
		{name: "bool at opt opt bool", in: `DIDL\00\01\7e\01`, ts: types(Opt(Opt(Bool()))), want: vals(Some(Some(BoolValue(true))))},
		{name: "opt true at opt nat", in: `DIDL\01\6e\7e\01\00\01\01`, ts: types(Opt(Nat())), want: vals(None())},
		{name: "opt invalid bool at opt nat", in: `DIDL\01\6e\7e\01\00\01\02`, ts: types(Opt(Nat())), bad: true},
		{name: "recovered under variant", in: `DIDL\02\6e\01\6b\01\00\7e\01\00\01\00\01`, ts: types(Opt(Variant(IDField(0, Int())))), want: vals(None())},
		{name: "reserved at opt nat", in: `DIDL\00\01\70`, ts: types(Opt(Nat())), want: vals(None())},
		{name: "vec null big", in: `DIDL\01\6d\7f\01\00\e8\07`, ts: types(Vec(Null()))},
		{name: "vec too short", in: `DIDL\01\6d\7c\01\00\02\01`, ts: types(Vec(Int())), bad: true},
		{name: "record missing field", in: `DIDL\01\6c\01\01\7c\01\00\2a`, ts: types(Record(IDField(2, Int()))), bad: true},
		{name: "record missing opt", in: `DIDL\01\6c\01\01\7c\01\00\2a`, ts: types(Record(IDField(2, Opt(Int())))), want: vals(RecordValue(FieldValue{ID: 2, Value: None()}))},
		{name: "record duplicate fields", in: `DIDL\01\6c\02\00\7c\00\7e\01\00\2a\01`, ts: types(Record(IDField(0, Int()), IDField(1, Bool()))), bad: true},
		{name: "field hash > u32", in: `DIDL\01\6c\01\80\e4\97\d0\12\7c\01\00\2a`, ts: types(Record()), bad: true},
		{name: "variant change index", in: `DIDL\01\6b\02\00\7f\01\7f\01\00\01`, ts: types(Variant(IDField(0, Null()), IDField(1, Null()), IDField(2, Null()))), want: vals(VariantValue(FieldValue{ID: 1, Value: NullValue()}))},
		{name: "variant missing field", in: `DIDL\01\6b\01\00\7f\01\00\00`, ts: types(Variant(IDField(1, Null()))), bad: true},
		{name: "variant {0;1} <: opt variant {0}", in: `DIDL\01\6b\02\00\7f\01\7f\01\00\00`, ts: types(Opt(Variant(IDField(0, Null())))), want: vals(Some(VariantValue(FieldValue{ID: 0, Value: NullValue()})))},
		{name: "list", in: `DIDL\02\6e\01\6c\02\a0\d2\ac\a8\04\7c\90\ed\da\e7\04\00\01\00\01\01\01\02\00`, ts: types(listType()),
			want: vals(Some(RecordValue(FieldValue{ID: FieldHash("head"), Value: intV(1)}, FieldValue{ID: FieldHash("tail"), Value: Some(RecordValue(FieldValue{ID: FieldHash("head"), Value: intV(2)}, FieldValue{ID: FieldHash("tail"), Value: None()}))})))},
		{name: "variant extra args", in: `DIDL\02\6b\02\d1\a7\cf\02\7f\f1\f3\92\8e\04\01\6c\02\a0\d2\ac\a8\04\7c\90\ed\da\e7\04\00\01\00\00`, ts: types(variantList, Opt(variantList), Null(), Reserved(), Opt(Int())),
			want: vals(VariantValue(FieldValue{ID: FieldHash("nil"), Value: NullValue()}), None(), NullValue(), ReservedValue(), None())},
		{name: "future type skipped", in: `DIDL\01\67\03ABC\02\00\7e\05\00hello\01`, ts: types(Opt(Empty()), Bool()), want: vals(None(), BoolValue(true))},
		{name: "principal", in: `DIDL\00\01\68\01\03\ca\ff\ee`, ts: types(Principal()), want: vals(PrincipalValue([]byte{0xca, 0xff, 0xee}))},
		{name: "principal no tag", in: `DIDL\00\01\68\03\ca\ff\ee`, ts: types(Principal()), bad: true},
		{name: "service at principal", in: `DIDL\01\69\00\01\00\01\03\ca\ff\ee`, ts: types(Principal()), want: vals(PrincipalValue([]byte{0xca, 0xff, 0xee}))},
		{name: "empty wire at principal", in: `DIDL\00\01\6f\01\03\ca\ff\ee`, ts: types(Principal()), bad: true},
		{name: "service method not func", in: `DIDL\02\6a\01\71\01\7d\00\69\01\03foo\68\01\01\01\03\ca\ff\ee`, ts: types(Service(Method{Name: "foo", Type: Func(nil, nil)})), bad: true},
		{name: "func", in: `DIDL\01\6a\01\71\01\7d\00\01\00\01\01\03\ca\ff\ee\03foo`, ts: types(Func(types(Text(), Opt(Text())), nil)), want: vals(Value{Kind: KindFunc, Bytes: []byte{0xca, 0xff, 0xee}, Text: "foo"})},
		{name: "func annotation mismatch", in: `DIDL\01\6a\01\71\01\7d\01\03\01\00\01\01\03\ca\ff\ee\03foo`, ts: types(Func(types(Text()), types(Nat()))), bad: true},
		{name: "record empty recursion", in: `DIDL\01\6c\01\00\00\01\00`, ts: types(func() *Type { r := Placeholder(); _ = r.Define(Record(IDField(0, r))); return r }()), bad: true},
		{name: "vec null space bomb", in: `DIDL\01\6d\7f\01\00\80\94\eb\dc\03`, ts: types(), bad: true},
		{name: "vec vec null bomb", in: `DIDL\02\6d\01\6d\7f\01\00\05\ff\ff\3f\ff\ff\3f\ff\ff\3f\ff\ff\3f\ff\ff\3f`, ts: types(Vec(Vec(Null()))), bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeValues(blob(t, c.in), c.ts)
			if c.bad {
				if err == nil {
					t.Fatalf("decoded %v, want an error", got)
				}
				var de *DecodeError
				if !errors.As(err, &de) {
					t.Fatalf("error %v is not a *DecodeError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want == nil {
				return
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %d values, want %d", len(got), len(c.want))
			}
			for i := range got {
				if !got[i].Equal(c.want[i]) {
					t.Errorf("value %d = %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}
