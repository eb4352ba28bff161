package cborx

import (
	"bytes"
	"testing"

	"alpnib.dev/ic/internal/memtest"
)

func TestMarshalPrependsTheSelfDescribeTagAndUnmarshalAcceptsIt(t *testing.T) {
	b, err := Marshal(map[string][]byte{"k": nil})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, SelfDescribe) {
		t.Fatalf("%x lacks the tag", b)
	}
	// A nil blob is an empty byte string (0x40), never null (0xf6).
	if !bytes.HasSuffix(b, []byte{0x40}) {
		t.Errorf("nil encoded as %x", b)
	}
	var back map[string][]byte
	if err := Unmarshal(b, &back); err != nil || back["k"] == nil || len(back["k"]) != 0 {
		t.Errorf("back = %#v, %v", back, err)
	}
}

func TestHostileInputFailsFast(t *testing.T) {
	deep := append(bytes.Repeat([]byte{0x81}, MaxDepth+10), 0x00)
	var v any
	if err := Unmarshal(deep, &v); err == nil {
		t.Error("nesting beyond MaxDepth accepted")
	}
	// An array claiming 2^32 elements in five bytes.
	if err := Unmarshal([]byte{0x9a, 0xff, 0xff, 0xff, 0xff}, &v); err == nil {
		t.Error("huge declared array accepted")
	}
	if err := Unmarshal([]byte{0xa2, 0x61, 0x61, 0x00, 0x61, 0x61, 0x01}, &v); err == nil {
		t.Error("duplicate map key accepted")
	}
}

// TestDeclaredSizesCostNothingUntilTheBytesArePresent feeds headers that
// declare huge byte strings, texts, arrays and maps (and a long run of
// indefinite-length nesting) in a few bytes: each must be refused, and
// refusing it must allocate a small constant, not the declared size.
func TestDeclaredSizesCostNothingUntilTheBytesArePresent(t *testing.T) {
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}
	cases := map[string][]byte{
		"byte string of 2^64-256 bytes": append([]byte{0x5b}, huge...),
		"text of 2^64-256 bytes":        append([]byte{0x7b}, huge...),
		"array of 2^32-1 elements":      {0x9a, 0xff, 0xff, 0xff, 0xff, 0x00},
		"array of 2^20+1 elements":      append([]byte{0x9a, 0x00, 0x10, 0x00, 0x01}, bytes.Repeat([]byte{0x00}, 1<<20+1)...),
		"map of 2^32-1 pairs":           {0xba, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00},
		"tagged byte string of 2^32":    append(append([]byte{}, SelfDescribe...), 0x5a, 0xff, 0xff, 0xff, 0xff, 0x01),
		"indefinite arrays 100000 deep": bytes.Repeat([]byte{0x9f}, 100000),
	}
	for name, data := range cases {
		targets := []any{new(any), new([]byte), new(map[string]any), new([]any)}
		allocated := memtest.Allocated(func() {
			for _, v := range targets {
				if err := Unmarshal(data, v); err == nil {
					t.Errorf("%s into %T: accepted", name, v)
				}
			}
		})
		t.Logf("%s: %d bytes allocated", name, allocated)
		// Even the 2^20+1 real elements are refused by their count before
		// anything is built for them: a few KiB is all any case costs.
		if allocated > 64<<10 {
			t.Errorf("%s: refusing it allocated %d bytes for a %d-byte input", name, allocated, len(data))
		}
	}
}
