package principal

import (
	"strings"
	"testing"
)

// FuzzDecode: Decode never panics, and whatever it accepts prints back as
// the lower-cased input and survives a byte round trip.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{"aaaaa-aa", "2vxsx-fae", "rrkah-fqaaa-aaaaa-aaaaq-cai", "AAAAA-AA", "aaaaa-ab", "", "-", "aaaaa-a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := Decode(s)
		if err != nil {
			return
		}
		if p.String() != strings.ToLower(s) {
			t.Fatalf("Decode(%q).String() = %q", s, p.String())
		}
		q, err := FromBytes(p.Bytes())
		if err != nil || q != p {
			t.Fatalf("byte round trip of %q: %v", s, err)
		}
	})
}
