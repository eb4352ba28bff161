package idl

import (
	"math"
	"math/big"
	"testing"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

func TestValuesArePrintedInCandidTextSyntax(t *testing.T) {
	id := principal.MustDecode("w7x7r-cok77-xa")
	cases := []struct {
		v    candid.Value
		want string
	}{
		{candid.TextValue("a\"b\\\n☃\x01"), `"a\"b\\\n☃\01"`},
		{candid.BlobValue([]byte{0, 'A', 0xff}), `blob "\00A\ff"`},
		{candid.PrincipalValue(id.Bytes()), `principal "w7x7r-cok77-xa"`},
		{candid.Value{Kind: candid.KindFunc, Bytes: id.Bytes(), Text: "query"}, `func "w7x7r-cok77-xa"."query"`},
		{candid.Value{Kind: candid.KindFunc, Bytes: id.Bytes(), Text: "get_x"}, `func "w7x7r-cok77-xa".get_x`},
		{candid.Value{Kind: candid.KindFloat64, Float: 3}, `3.`},
		{candid.Value{Kind: candid.KindFloat32, Float: float64(float32(0.1))}, `0.1`},
		{candid.Value{Kind: candid.KindFloat64, Float: math.Inf(-1)}, `-inf`},
		{candid.Some(candid.IntValue(big.NewInt(-5))), `opt -5`},
		{candid.None(), `null`},
		{candid.RecordValue(
			candid.FieldValue{ID: 0, Value: candid.BoolValue(true)},
			candid.FieldValue{ID: candid.FieldHash("my field"), Name: "my field", Value: candid.NullValue()},
		), `record { 0 = true; "my field" = null }`},
		{candid.VariantValue(candid.FieldValue{ID: candid.FieldHash("Ok"), Name: "Ok", Value: candid.VecValue()}), `variant { Ok = vec {} }`},
	}
	for _, c := range cases {
		if got := FormatValue(c.v); got != c.want {
			t.Errorf("FormatValue = %s, want %s", got, c.want)
		}
	}
	if got := FormatValues([]candid.Value{candid.NullValue(), candid.BoolValue(false)}); got != "(null, false)" {
		t.Errorf("FormatValues = %s", got)
	}
}
