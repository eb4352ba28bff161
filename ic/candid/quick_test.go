package candid

import (
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
)

// randomShape is a Go type testing/quick can fill at random: every field
// kind the mapping has that quick knows how to generate.
type randomShape struct {
	B     bool                `candid:"b"`
	U8    uint8               `candid:"u8"`
	U16   uint16              `candid:"u16"`
	U32   uint32              `candid:"u32"`
	U64   uint64              `candid:"u64"`
	I8    int8                `candid:"i8"`
	I16   int16               `candid:"i16"`
	I32   int32               `candid:"i32"`
	I64   int64               `candid:"i64"`
	F32   float32             `candid:"f32"`
	F64   float64             `candid:"f64"`
	S     string              `candid:"s"`
	Blob  []byte              `candid:"blob"`
	Vec   []int16             `candid:"vec"`
	Opt   *uint32             `candid:"opt"`
	OptS  *string             `candid:"opt_s"`
	Inner []randomInner       `candid:"inner"`
	Deep  *[]*[]string        `candid:"deep"`
	Tuple struct{ A, B int8 } `candid:"tuple"`
}

type randomInner struct {
	Name  string   `candid:"name"`
	Tags  []string `candid:"tags"`
	Maybe *bool    `candid:"maybe"`
}

// The conformance suite asks implementations to add randomized round trips
// (host value → Candid → host value), since it cannot test encoding.
func TestRandomGoValuesRoundTripAndBothEncodersAgree(t *testing.T) {
	typ, err := TypeOf(reflect.TypeFor[randomShape]())
	if err != nil {
		t.Fatal(err)
	}
	roundTrip := func(in randomShape) bool {
		data, err := Marshal(in)
		if err != nil {
			t.Logf("Marshal: %v", err)
			return false
		}
		var out randomShape
		if err := Unmarshal(data, &out); err != nil {
			t.Logf("Unmarshal: %v", err)
			return false
		}
		// Decoding gives empty slices where the value had nil ones.
		if !reflect.DeepEqual(normalize(in), normalize(out)) {
			t.Logf("in  %+v\nout %+v", in, out)
			return false
		}
		vals, err := DecodeValues(data, []*Type{typ})
		if err != nil {
			t.Logf("DecodeValues: %v", err)
			return false
		}
		again, err := EncodeValues([]*Type{typ}, vals)
		if err != nil || string(again) != string(data) {
			t.Logf("EncodeValues: %v\n%x\n%x", err, again, data)
			return false
		}
		return true
	}
	cfg := &quick.Config{MaxCount: 300, Rand: rand.New(rand.NewSource(3))}
	if err := quick.Check(roundTrip, cfg); err != nil {
		t.Fatal(err)
	}
}

// normalize makes nil and empty slices alike, recursively.
func normalize(v any) any {
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		case reflect.Slice:
			if v.Len() == 0 && v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		}
	}
	p := reflect.New(reflect.TypeOf(v))
	p.Elem().Set(reflect.ValueOf(v))
	walk(p.Elem())
	return p.Elem().Interface()
}
