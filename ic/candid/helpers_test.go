package candid

import (
	"encoding/hex"
	"math/big"
	"strings"
	"testing"
)

// blob reads the byte notation of the conformance suite: `\xx` is a hex
// byte, `\\` a backslash, anything else stands for itself.
func blob(t testing.TB, s string) []byte {
	t.Helper()
	var out []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			out = append(out, s[i])
			continue
		}
		if i+2 >= len(s)+0 && i+2 > len(s) {
			t.Fatalf("bad escape in %q", s)
		}
		b, err := hex.DecodeString(s[i+1 : i+3])
		if err != nil {
			t.Fatalf("bad escape in %q: %v", s, err)
		}
		out = append(out, b...)
		i += 2
	}
	return out
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func natV(n int64) Value        { return Value{Kind: KindNat, Big: big.NewInt(n)} }
func intV(n int64) Value        { return Value{Kind: KindInt, Big: big.NewInt(n)} }
func types(ts ...*Type) []*Type { return ts }
func vals(vs ...Value) []Value  { return vs }
