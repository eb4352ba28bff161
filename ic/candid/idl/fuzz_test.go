package idl

import (
	"errors"
	"strings"
	"testing"

	"alpnib.dev/ic/candid"
)

// FuzzParseDid feeds arbitrary service descriptions to the parser. It must
// never panic or hang; what it accepts must be a type graph candid itself
// accepts; what it refuses must be refused with a located error.
//
//	go test -run '^$' -fuzz FuzzParseDid -fuzztime 60s ./ic/candid/idl
//
// The seed corpus is testdata/fuzz/FuzzParseDid.
func FuzzParseDid(f *testing.F) {
	f.Add([]byte(`type t = record { a : nat; b : opt t }; service : { f : (t) -> (vec t) query }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := Parse("fuzz.did", src)
		if err != nil {
			var located *Error
			if errors.As(err, &located) && !strings.HasPrefix(err.Error(), "fuzz.did:") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		for name, typ := range p.Types {
			if err := typ.Check(); err != nil {
				t.Fatalf("accepted type %s is not a valid candid type: %v", name, err)
			}
			_ = typ.String()
		}
		if p.Service != nil {
			if err := p.Service.Check(); err != nil {
				t.Fatalf("accepted service is not valid: %v", err)
			}
			if p.Service.Resolved().Kind != candid.KindService {
				t.Fatalf("service is a %s", p.Service.Resolved().Kind)
			}
		}
	})
}

// FuzzParseValues feeds arbitrary text values at a fixed, rich type; what
// it accepts must print (FormatValues) as text that reads back equal.
//
//	go test -run '^$' -fuzz FuzzParseValues -fuzztime 60s ./ic/candid/idl
func FuzzParseValues(f *testing.F) {
	prog, err := Parse("fuzz.did", []byte(`type T = record { a : nat; b : opt vec T; c : variant { x; y : text }; d : blob; e : float32; f : principal; g : int8 };`))
	if err != nil {
		f.Fatal(err)
	}
	types := []*candid.Type{prog.Types["T"], candid.Opt(candid.Int())}
	f.Add(`(record { a = 1; b = opt vec {}; c = variant { y = "s" }; d = blob "\00"; e = 1.5; f = principal "aaaaa-aa"; g = -3 }, 5)`)
	f.Fuzz(func(t *testing.T, text string) {
		vs, err := prog.ParseValues(text, types)
		if err != nil {
			return
		}
		if len(vs) != len(types) {
			t.Fatalf("%d values for %d types", len(vs), len(types))
		}
		// What was read prints as text that reads back the same.
		printed := FormatValues(vs)
		back, err := prog.ParseValues(printed, types)
		if err != nil {
			if hasNonFinite(vs) {
				return
			}
			t.Fatalf("%s printed as %s, which does not read back: %v", text, printed, err)
		}
		for i := range vs {
			if !vs[i].Equal(back[i]) {
				t.Fatalf("%s printed as %s read back as %s", text, printed, FormatValues(back))
			}
		}
	})
}
