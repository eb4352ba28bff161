package candid

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to every decoder. Whatever the input,
// decoding returns a value or a *DecodeError (never a panic or a hang), and
// a message that decodes re-encodes to one that decodes to equal values.
//
//	go test -run '^$' -fuzz FuzzDecode ./ic/candid/
//
// The seed corpus in testdata/fuzz/FuzzDecode holds the official suite's
// messages and the benchmark workloads.
func FuzzDecode(f *testing.F) {
	f.Add([]byte("DIDL\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		isDecodeError := func(what string, err error) {
			var de *DecodeError
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s: error %v (%T) is not a *DecodeError", what, err, err)
			}
			if de != nil && (de.Offset < 0 || de.Offset > len(data)) {
				t.Fatalf("%s: offset %d outside the message", what, de.Offset)
			}
		}
		ts, vs, err := Decode(data)
		isDecodeError("Decode", err)
		if err == nil && !hasFuture(ts) {
			enc, err := EncodeValues(ts, vs)
			if err != nil {
				t.Fatalf("re-encoding %v: %v", vs, err)
			}
			back, err := DecodeValues(enc, ts)
			if err != nil {
				t.Fatalf("decoding the re-encoded message %x: %v", enc, err)
			}
			for i := range vs {
				if !vs[i].Equal(back[i]) {
					t.Fatalf("argument %d changed in a round trip: %v then %v", i, vs[i], back[i])
				}
			}
		}
		// The typed and the dynamic decoder agree: what DecodeValues reads
		// at the Go type's Candid type, Unmarshal reads too (it is only
		// more lenient: a wire nat fits a uint64), and both re-encode to
		// the same bytes.
		var info proposalInfo
		errT := Unmarshal(data, &info)
		isDecodeError("Unmarshal proposalInfo", errT)
		pvs, errV := DecodeValues(data, []*Type{proposalInfoType})
		isDecodeError("DecodeValues proposalInfo", errV)
		if errV == nil {
			if errT != nil {
				t.Fatalf("DecodeValues accepted what Unmarshal refused: %v", errT)
			}
			a, err := Marshal(info)
			if err != nil {
				t.Fatal(err)
			}
			b, err := EncodeValues([]*Type{proposalInfoType}, pvs)
			if err != nil {
				t.Fatal(err)
			}
			if string(a) != string(b) {
				t.Fatalf("the decoders disagree:\nMarshal      %x\nEncodeValues %x", a, b)
			}
		}
		var opt nestedOpt
		var vecs nestedVecs
		var text string
		isDecodeError("Unmarshal recursive", Unmarshal(data, &opt, &vecs, &text))
	})
}

var proposalInfoType, _ = TypeOf(reflect.TypeFor[proposalInfo]())

func hasFuture(ts []*Type) bool {
	seen := map[*Type]bool{}
	var walk func(t *Type) bool
	walk = func(t *Type) bool {
		t = t.Resolved()
		if seen[t] {
			return false
		}
		seen[t] = true
		if t.Kind == KindFuture {
			return true
		}
		for _, c := range children(t) {
			if walk(c) {
				return true
			}
		}
		return false
	}
	for _, t := range ts {
		if walk(t) {
			return true
		}
	}
	return false
}
