package leb128

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestTheSpecExamplesEncode(t *testing.T) {
	if got := hex.EncodeToString(AppendUnsigned(nil, 624485)); got != "e58e26" {
		t.Errorf("uleb(624485) = %s", got)
	}
	if got := hex.EncodeToString(AppendSigned(nil, -123456)); got != "c0bb78" {
		t.Errorf("sleb(-123456) = %s", got)
	}
	if got := hex.EncodeToString(AppendUnsigned(nil, math.MaxUint64)); got != "ffffffffffffffffff01" {
		t.Errorf("uleb(max) = %s", got)
	}
	big65 := new(big.Int).Lsh(big.NewInt(1), 64)
	if got := hex.EncodeToString(AppendUnsignedBig(nil, big65)); got != "80808080808080808002" {
		t.Errorf("uleb(2^64) = %s", got)
	}
}

func TestUnsignedRoundTripsAndRefusesBadInput(t *testing.T) {
	for _, n := range []uint64{0, 1, 127, 128, 1645601880652705378, math.MaxUint64} {
		enc := AppendUnsigned(nil, n)
		got, used, err := Unsigned(enc)
		if err != nil || got != n || used != len(enc) {
			t.Errorf("Unsigned(%x) = %d, %d, %v", enc, got, used, err)
		}
	}
	if _, _, err := Unsigned([]byte{0x80, 0x80}); !errors.Is(err, ErrTruncated) {
		t.Errorf("truncated: %v", err)
	}
	if _, _, err := Unsigned([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}); !errors.Is(err, ErrOverflow) {
		t.Errorf("2^64: %v", err)
	}
	if _, _, err := Unsigned([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}); !errors.Is(err, ErrOverflow) {
		t.Errorf("11 bytes: %v", err)
	}
}

func TestKnownAnswersOfBothForms(t *testing.T) {
	for _, c := range []struct {
		n    int64
		uleb string
		sleb string
	}{
		{0, "00", "00"},
		{127, "7f", "ff00"},
		{128, "8001", "8001"},
		{624485, "e58e26", "e58e26"},
		{-1, "", "7f"},
		{-64, "", "40"},
		{-65, "", "bf7f"},
		{-123456, "", "c0bb78"},
	} {
		if c.uleb != "" {
			if got := hex.EncodeToString(AppendUnsigned(nil, uint64(c.n))); got != c.uleb {
				t.Errorf("LEB128(%d) = %s, want %s", c.n, got, c.uleb)
			}
		}
		if got := hex.EncodeToString(AppendSigned(nil, c.n)); got != c.sleb {
			t.Errorf("SLEB128(%d) = %s, want %s", c.n, got, c.sleb)
		}
	}
}

// shiftingUnsignedBig is the plain textbook encoder (mask 7 bits, shift,
// repeat), kept as an independent reference for the word-walking one.
func shiftingUnsignedBig(n *big.Int) []byte {
	var out []byte
	x := new(big.Int).Set(n)
	mask := big.NewInt(0x7f)
	for {
		b := byte(new(big.Int).And(x, mask).Uint64())
		x.Rsh(x, 7)
		if x.Sign() == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func TestBigNumbersEncodeAsTheTextbookSaysAndReadBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		n := new(big.Int)
		for words := rng.IntN(6); words >= 0; words-- {
			n.Lsh(n, 64)
			n.Or(n, new(big.Int).SetUint64(rng.Uint64()>>rng.IntN(64)))
		}
		enc := AppendUnsignedBig(nil, n)
		if want := shiftingUnsignedBig(n); !bytes.Equal(enc, want) {
			t.Fatalf("uleb(%s) = %x, want %x", n, enc, want)
		}
		if got := GroupsToBig(enc); got.Cmp(n) != 0 {
			t.Fatalf("GroupsToBig(uleb(%s)) = %s", n, got)
		}
		neg := new(big.Int).Neg(n)
		senc := AppendSignedBig(nil, neg)
		got := GroupsToBig(senc)
		if senc[len(senc)-1]&0x40 != 0 {
			got.Sub(got, new(big.Int).Lsh(big.NewInt(1), uint(7*len(senc))))
		}
		if got.Cmp(neg) != 0 {
			t.Fatalf("sleb(%s) = %x reads back as %s", neg, senc, got)
		}
	}
}
