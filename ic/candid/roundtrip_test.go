package candid

import (
	"errors"
	"math"
	"math/big"
	"reflect"
	"testing"

	"alpnib.dev/ic/principal"
)

type result struct {
	OneOf
	Ok      *uint64   `candid:"Ok"`
	Err     *string   `candid:"Err"`
	Pending *struct{} `candid:"Pending"`
}

type list struct {
	Head int64 `candid:"head"`
	Tail *list `candid:"tail"`
}

type pair struct {
	A string `candid:"0"`
	B int8   `candid:"1"`
}

type everything struct {
	B      bool                `candid:"b"`
	U8     uint8               `candid:"u8"`
	U16    uint16              `candid:"u16"`
	U32    uint32              `candid:"u32"`
	U64    uint64              `candid:"u64"`
	U      uint                `candid:"u"`
	I8     int8                `candid:"i8"`
	I16    int16               `candid:"i16"`
	I32    int32               `candid:"i32"`
	I64    int64               `candid:"i64"`
	I      int                 `candid:"i"`
	F32    float32             `candid:"f32"`
	F64    float64             `candid:"f64"`
	S      string              `candid:"s"`
	Blob   []byte              `candid:"blob"`
	P      principal.Principal `candid:"p"`
	N      Natural             `candid:"n"`
	Z      Integer             `candid:"z"`
	BI     *big.Int            `candid:"bi"`
	Null   Unit                `candid:"null"`
	Res    Ignore              `candid:"res"`
	Fn     FuncRef             `candid:"fn"`
	Svc    ServiceRef          `candid:"svc"`
	Vec    []uint16            `candid:"vec"`
	Opt    *string             `candid:"opt"`
	OptNil *int32              `candid:"opt_nil"`
	Nested []struct {
		A *[]string `candid:"a"`
	} `candid:"nested"`
	Var     result   `candid:"var"`
	Unit    result   `candid:"unit"`
	Tuple   pair     `candid:"tuple"`
	List    *list    `candid:"list"`
	Skipped string   `candid:"-"`
	Untaged string   // field name as is
	Options []*uint8 `candid:"options,omitempty"`
}

func sampleEverything() everything {
	big1, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	nat, _ := NaturalFromBig(new(big.Int).Lsh(big.NewInt(1), 100))
	ok, text, seven := uint64(42), "hello", uint8(7)
	strs := []string{"x", "ÿ"}
	return everything{
		B: true, U8: 255, U16: 65535, U32: math.MaxUint32, U64: math.MaxUint64, U: 12,
		I8: -128, I16: -32768, I32: math.MinInt32, I64: math.MinInt64, I: -5,
		F32: 1.5, F64: math.Inf(-1), S: "☃ snow", Blob: []byte{0, 1, 2, 255},
		P: principal.MustDecode("rrkah-fqaaa-aaaaa-aaaaq-cai"),
		N: nat, Z: IntegerFromBig(big1), BI: big.NewInt(-1),
		Fn:  FuncRef{Principal: principal.MustDecode("ryjl3-tyaaa-aaaaa-aaaba-cai"), Method: "transfer"},
		Svc: ServiceRef{Principal: principal.ManagementCanister},
		Vec: []uint16{1, 2, 3}, Opt: &text,
		Nested: []struct {
			A *[]string `candid:"a"`
		}{{A: &strs}, {}},
		Var:     result{Ok: &ok},
		Unit:    result{Pending: &struct{}{}},
		Tuple:   pair{A: "a", B: -1},
		List:    &list{Head: 1, Tail: &list{Head: 2}},
		Untaged: "as is",
		Options: []*uint8{nil, &seven},
	}
}

func TestEveryGoTypeSurvivesARoundTrip(t *testing.T) {
	in := sampleEverything()
	data, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out everything
	out.Skipped = "kept"
	if err := Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Skipped != "kept" {
		t.Errorf("a `candid:\"-\"` field was written")
	}
	out.Skipped = ""
	// big.Int internals may differ in capacity; compare those by value.
	if out.N.String() != in.N.String() || out.Z.String() != in.Z.String() || out.BI.Cmp(in.BI) != 0 {
		t.Errorf("numbers: got %s %s %s, want %s %s %s", &out.N, &out.Z, out.BI, &in.N, &in.Z, in.BI)
	}
	out.N, out.Z, out.BI = in.N, in.Z, in.BI
	if !reflect.DeepEqual(in, out) {
		t.Fatalf("round trip changed the value:\n in %+v\nout %+v", in, out)
	}
	// The dynamic decoder reads the same message at the same type.
	typ, err := TypeOf(reflect.TypeFor[everything]())
	if err != nil {
		t.Fatal(err)
	}
	vals, err := DecodeValues(data, types(typ))
	if err != nil {
		t.Fatal(err)
	}
	again, err := EncodeValues(types(typ), vals)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(data) {
		t.Fatalf("EncodeValues of the decoded values gave other bytes:\n%x\n%x", again, data)
	}
}

func TestTheGoMappingGivesTheExpectedCandidTypes(t *testing.T) {
	for _, c := range []struct {
		rt   reflect.Type
		want string
	}{
		{reflect.TypeFor[result](), "variant { Ok : nat64; Err : text; Pending : null }"},
		{reflect.TypeFor[*list](), "μ0.opt record { head : int64; tail : μ0 }"},
		{reflect.TypeFor[pair](), "record { 0 : text; 1 : int8 }"},
		{reflect.TypeFor[[]byte](), "vec nat8"},
		{reflect.TypeFor[Natural](), "nat"},
		{reflect.TypeFor[FuncRef](), "func () -> ()"},
	} {
		typ, err := TypeOf(c.rt)
		if err != nil {
			t.Fatal(err)
		}
		if got := typ.String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.rt, got, c.want)
		}
	}
	if _, err := TypeOf(reflect.TypeFor[map[string]int]()); err == nil {
		t.Errorf("a map has no Candid mapping but TypeOf accepted it")
	}
}

func TestMarshalRefusesAVariantWithNoneOrTwoCasesSet(t *testing.T) {
	ok, msg := uint64(1), "no"
	for _, v := range []result{{}, {Ok: &ok, Err: &msg}} {
		if _, err := Marshal(v); err == nil {
			t.Errorf("Marshal(%+v) succeeded", v)
		}
	}
	if _, err := Marshal("\xff"); err == nil {
		t.Errorf("Marshal accepted invalid UTF-8 text")
	}
}

// Older and newer versions of one record, as a canister evolves.
type accountV1 struct {
	Owner string `candid:"owner"`
	Count uint64 `candid:"count"`
}

type accountV2 struct {
	Owner    string   `candid:"owner"`
	Count    uint64   `candid:"count"`
	Nickname *string  `candid:"nickname"`
	Tags     []string `candid:"tags"`
}

func TestUnmarshalAppliesCandidSubtyping(t *testing.T) {
	nick := "n"
	newer, _ := Marshal(accountV2{Owner: "o", Count: 3, Nickname: &nick, Tags: []string{"t"}})
	older, _ := Marshal(accountV1{Owner: "o", Count: 3})

	t.Run("extra record fields are ignored", func(t *testing.T) {
		var v accountV1
		if err := Unmarshal(newer, &v); err != nil || v != (accountV1{"o", 3}) {
			t.Fatalf("got %+v, %v", v, err)
		}
	})
	t.Run("a missing opt field reads as nil", func(t *testing.T) {
		stale := "stale"
		v := accountV2{Nickname: &stale}
		err := Unmarshal(older, &v)
		var de *DecodeError
		// tags is a vec, not optional: the message lacks it.
		if !errors.As(err, &de) || !errors.Is(err, ErrSubtype) {
			t.Fatalf("missing required field: got %v", err)
		}
		type accountOpt struct {
			Owner    string  `candid:"owner"`
			Nickname *string `candid:"nickname"`
		}
		w := accountOpt{Nickname: &stale}
		if err := Unmarshal(older, &w); err != nil || w.Nickname != nil {
			t.Fatalf("got %+v, %v", w, err)
		}
	})
	t.Run("an opt whose content does not fit reads as nil", func(t *testing.T) {
		data, _ := Marshal(&nick) // opt text
		var n *uint64
		if err := Unmarshal(data, &n); err != nil || n != nil {
			t.Fatalf("got %v, %v", n, err)
		}
	})
	t.Run("a bare value reads into an opt", func(t *testing.T) {
		data, _ := Marshal(uint64(9))
		var n *uint64
		if err := Unmarshal(data, &n); err != nil || n == nil || *n != 9 {
			t.Fatalf("got %v, %v", n, err)
		}
	})
	t.Run("missing trailing opt arguments read as nil, others fail", func(t *testing.T) {
		data, _ := Marshal("only")
		var s string
		var o *string = &nick
		if err := Unmarshal(data, &s, &o); err != nil || s != "only" || o != nil {
			t.Fatalf("got %q %v, %v", s, o, err)
		}
		var n uint64
		if err := Unmarshal(data, &s, &n); !errors.Is(err, ErrSubtype) {
			t.Fatalf("missing nat64 argument: got %v", err)
		}
	})
	t.Run("extra arguments are skipped", func(t *testing.T) {
		data, _ := Marshal("a", accountV2{Tags: []string{"x"}}, uint8(1))
		var s string
		if err := Unmarshal(data, &s); err != nil || s != "a" {
			t.Fatalf("got %q, %v", s, err)
		}
	})
	t.Run("a nat reads into an unsigned Go integer when it fits", func(t *testing.T) {
		data, _ := Marshal(NaturalOf(300))
		var u16 uint16
		if err := Unmarshal(data, &u16); err != nil || u16 != 300 {
			t.Fatalf("got %d, %v", u16, err)
		}
		var u8 uint8
		if err := Unmarshal(data, &u8); !errors.Is(err, ErrSubtype) {
			t.Fatalf("300 into uint8: got %v", err)
		}
	})
	t.Run("an int or nat reads into int64 and Integer", func(t *testing.T) {
		data, _ := Marshal(IntegerOf(-7), NaturalOf(7))
		var a, b int64
		if err := Unmarshal(data, &a, &b); err != nil || a != -7 || b != 7 {
			t.Fatalf("got %d %d, %v", a, b, err)
		}
		var x, y Integer
		if err := Unmarshal(data, &x, &y); err != nil || x.String() != "-7" || y.String() != "7" {
			t.Fatalf("got %s %s, %v", &x, &y, err)
		}
	})
	t.Run("a variant case the Go type lacks fails, but reads as nil under opt", func(t *testing.T) {
		type narrow struct {
			OneOf
			Ok *uint64 `candid:"Ok"`
		}
		msg := "boom"
		data, _ := Marshal(result{Err: &msg})
		var v narrow
		if err := Unmarshal(data, &v); !errors.Is(err, ErrSubtype) {
			t.Fatalf("got %v", err)
		}
		optData, _ := Marshal(&result{Err: &msg})
		var o *narrow
		if err := Unmarshal(optData, &o); err != nil || o != nil {
			t.Fatalf("got %+v, %v", o, err)
		}
		var full result
		if err := Unmarshal(data, &full); err != nil || full.Err == nil || *full.Err != "boom" || full.Ok != nil {
			t.Fatalf("got %+v, %v", full, err)
		}
	})
	t.Run("Ignore reads anything", func(t *testing.T) {
		var ig Ignore
		var s string
		data, _ := Marshal(sampleEverything(), "after")
		if err := Unmarshal(data, &ig, &s); err != nil || s != "after" {
			t.Fatalf("got %q, %v", s, err)
		}
	})
	t.Run("a wrong primitive type fails with ErrSubtype", func(t *testing.T) {
		data, _ := Marshal(uint8(1))
		var u16 uint16
		var de *DecodeError
		if err := Unmarshal(data, &u16); !errors.As(err, &de) || !errors.Is(err, ErrSubtype) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestUnmarshalWantsNonNilPointers(t *testing.T) {
	data, _ := Marshal(uint8(1))
	var p *uint8
	for _, arg := range []any{uint8(0), p, nil} {
		if err := Unmarshal(data, arg); err == nil {
			t.Errorf("Unmarshal into %T succeeded", arg)
		}
	}
}
