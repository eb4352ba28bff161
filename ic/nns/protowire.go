package nns

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// The small protobuf toolkit the record codecs share: an encoder that
// omits default values as proto3 does, and a field walker that skips what
// it does not know.

type enc struct{ b []byte }

func (e *enc) varint(n protowire.Number, v uint64) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, v)
}

func (e *enc) boolean(n protowire.Number, v bool) {
	if v {
		e.varint(n, 1)
	}
}

func (e *enc) optBool(n protowire.Number, v *bool) {
	if v == nil {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, protowire.EncodeBool(*v))
}

func (e *enc) optVarint(n protowire.Number, v *uint64) {
	if v == nil {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.VarintType)
	e.b = protowire.AppendVarint(e.b, *v)
}

func (e *enc) bytes(n protowire.Number, v []byte) {
	if len(v) == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

// always writes, even empty: for repeated elements and present messages.
func (e *enc) bytesAlways(n protowire.Number, v []byte) {
	e.b = protowire.AppendTag(e.b, n, protowire.BytesType)
	e.b = protowire.AppendBytes(e.b, v)
}

func (e *enc) str(n protowire.Number, v string) { e.bytes(n, []byte(v)) }

func (e *enc) fixed32(n protowire.Number, v uint32) {
	if v == 0 {
		return
	}
	e.b = protowire.AppendTag(e.b, n, protowire.Fixed32Type)
	e.b = protowire.AppendFixed32(e.b, v)
}

// fields walks a message, calling f for each field; f returns the number of
// bytes it consumed, or -1 to have the field skipped.
func fields(b []byte, f func(n protowire.Number, t protowire.Type, b []byte) (int, error)) error {
	for len(b) > 0 {
		n, t, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		used, err := f(n, t, b)
		if err != nil {
			return fmt.Errorf("field %d: %w", n, err)
		}
		if used < 0 {
			used = protowire.ConsumeFieldValue(n, t, b)
			if used < 0 {
				return protowire.ParseError(used)
			}
		}
		b = b[used:]
	}
	return nil
}

var errWireType = errors.New("unexpected wire type")

func getVarint(t protowire.Type, b []byte) (uint64, int, error) {
	if t != protowire.VarintType {
		return 0, 0, errWireType
	}
	v, l := protowire.ConsumeVarint(b)
	if l < 0 {
		return 0, 0, protowire.ParseError(l)
	}
	return v, l, nil
}

func getBytes(t protowire.Type, b []byte) ([]byte, int, error) {
	if t != protowire.BytesType {
		return nil, 0, errWireType
	}
	v, l := protowire.ConsumeBytes(b)
	if l < 0 {
		return nil, 0, protowire.ParseError(l)
	}
	return append([]byte(nil), v...), l, nil
}
