package cborx

import (
	"bytes"
	"testing"
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
