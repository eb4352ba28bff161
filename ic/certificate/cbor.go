package certificate

import (
	"encoding/binary"
	"errors"
	"fmt"

	"alpnib.dev/ic/internal/cborx"
)

// MarshalCBOR encodes the tree as the interface spec's CDDL says: arrays
// [0], [1, l, r], [2, label, t], [3, value], [4, digest].
func (t *Tree) MarshalCBOR() ([]byte, error) { return t.appendCBOR(nil), nil }

func (t *Tree) appendCBOR(out []byte) []byte {
	switch t.kind {
	case KindEmpty:
		return append(out, 0x81, 0x00)
	case KindFork:
		out = append(out, 0x83, 0x01)
		return t.right.appendCBOR(t.left.appendCBOR(out))
	case KindLabeled:
		out = append(out, 0x83, 0x02)
		out = appendBytes(out, t.label)
		return t.left.appendCBOR(out)
	case KindLeaf:
		return appendBytes(append(out, 0x82, 0x03), t.value)
	default: // KindPruned
		return appendBytes(append(out, 0x82, 0x04), t.value)
	}
}

// appendBytes appends a CBOR byte string header and b.
func appendBytes(out, b []byte) []byte {
	n := uint64(len(b))
	switch {
	case n < 24:
		out = append(out, 0x40|byte(n))
	case n <= 0xff:
		out = append(out, 0x58, byte(n))
	case n <= 0xffff:
		out = binary.BigEndian.AppendUint16(append(out, 0x59), uint16(n))
	case n <= 0xffffffff:
		out = binary.BigEndian.AppendUint32(append(out, 0x5a), uint32(n))
	default:
		out = binary.BigEndian.AppendUint64(append(out, 0x5b), n)
	}
	return append(out, b...)
}

// UnmarshalCBOR decodes a tree. Depth and size are bounded by the shared
// decoder limits, and every node must have exactly its fields.
func (t *Tree) UnmarshalCBOR(data []byte) error {
	var v any
	if err := cborx.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("decode hash tree: %w", err)
	}
	n, err := treeFromValue(v)
	if err != nil {
		return fmt.Errorf("decode hash tree: %w", err)
	}
	t.kind, t.left, t.right, t.label, t.value = n.kind, n.left, n.right, n.label, n.value
	t.sum.Store(nil)
	return nil
}

// DecodeTree decodes a CBOR hash tree.
func DecodeTree(data []byte) (*Tree, error) {
	t := new(Tree)
	if err := t.UnmarshalCBOR(data); err != nil {
		return nil, err
	}
	return t, nil
}

var errNode = errors.New("malformed node")

// arity is the array length of each node kind, tag included.
var arity = [...]int{KindEmpty: 1, KindFork: 3, KindLabeled: 3, KindLeaf: 2, KindPruned: 2}

func treeFromValue(v any) (*Tree, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, fmt.Errorf("%w: %T is not a non-empty array", errNode, v)
	}
	tag, ok := arr[0].(uint64)
	if !ok {
		return nil, fmt.Errorf("%w: tag is %T", errNode, arr[0])
	}
	if tag > uint64(KindPruned) || len(arr) != arity[tag] {
		return nil, fmt.Errorf("%w: tag %d with %d elements", errNode, tag, len(arr))
	}
	switch Kind(tag) {
	case KindEmpty:
		return Empty(), nil
	case KindFork:
		l, err := treeFromValue(arr[1])
		if err != nil {
			return nil, err
		}
		r, err := treeFromValue(arr[2])
		if err != nil {
			return nil, err
		}
		return Fork(l, r), nil
	case KindLabeled:
		label, ok := arr[1].([]byte)
		if !ok {
			return nil, fmt.Errorf("%w: label is %T", errNode, arr[1])
		}
		sub, err := treeFromValue(arr[2])
		if err != nil {
			return nil, err
		}
		return Labeled(label, sub), nil
	case KindLeaf:
		value, ok := arr[1].([]byte)
		if !ok {
			return nil, fmt.Errorf("%w: leaf value is %T", errNode, arr[1])
		}
		return Leaf(value), nil
	default: // KindPruned
		d, ok := arr[1].([]byte)
		if !ok || len(d) != 32 {
			return nil, fmt.Errorf("%w: pruned digest is not 32 bytes", errNode)
		}
		var digest [32]byte
		copy(digest[:], d)
		return Pruned(digest), nil
	}
}
