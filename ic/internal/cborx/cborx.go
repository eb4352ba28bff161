// Package cborx holds the one CBOR configuration the ic packages share: a
// deterministic encoder that prepends the self-describe tag (55799) the IC
// HTTP interface uses, and a decoder with limits low enough that a hostile
// response cannot make us allocate or recurse without bound.
package cborx

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// SelfDescribe is the encoding of tag 55799, which marks a byte string as CBOR.
var SelfDescribe = []byte{0xd9, 0xd9, 0xf7}

// Limits on decoded input. The IC's own payloads are at most a few MiB and its
// hash trees are balanced, so nesting stays far below MaxDepth.
const (
	MaxDepth    = 512
	MaxElements = 1 << 20
)

var (
	enc cbor.EncMode
	dec cbor.DecMode
)

func init() {
	var err error
	// Nil slices encode as empty ones: the management canister's id is an
	// empty blob, never null.
	enc, err = cbor.EncOptions{Sort: cbor.SortCoreDeterministic, NilContainers: cbor.NilContainerAsEmpty}.EncMode()
	if err != nil {
		panic(err)
	}
	dec, err = cbor.DecOptions{
		MaxNestedLevels:  MaxDepth,
		MaxArrayElements: MaxElements,
		MaxMapPairs:      MaxElements,
		DupMapKey:        cbor.DupMapKeyEnforcedAPF,
		IndefLength:      cbor.IndefLengthAllowed,
	}.DecMode()
	if err != nil {
		panic(err)
	}
}

// Marshal encodes v deterministically and prepends the self-describe tag.
func Marshal(v any) ([]byte, error) {
	b, err := enc.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(append(make([]byte, 0, len(b)+3), SelfDescribe...), b...), nil
}

// MarshalPlain encodes v deterministically without the self-describe tag, for
// values embedded in other CBOR.
func MarshalPlain(v any) ([]byte, error) { return enc.Marshal(v) }

// Unmarshal decodes data into v with the package limits. A leading
// self-describe tag is accepted and ignored; trailing bytes are an error.
func Unmarshal(data []byte, v any) error {
	if err := dec.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode CBOR: %w", err)
	}
	return nil
}
