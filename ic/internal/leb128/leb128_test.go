package leb128

import (
	"encoding/hex"
	"errors"
	"math"
	"math/big"
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
