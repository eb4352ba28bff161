package certificate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
)

// Kind is the node type of a hash tree.
type Kind uint8

// The five node kinds, numbered as in their CBOR encoding.
const (
	KindEmpty Kind = iota
	KindFork
	KindLabeled
	KindLeaf
	KindPruned
)

func (k Kind) String() string {
	switch k {
	case KindEmpty:
		return "empty"
	case KindFork:
		return "fork"
	case KindLabeled:
		return "labeled"
	case KindLeaf:
		return "leaf"
	case KindPruned:
		return "pruned"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Tree is a node of an IC hash tree: the state a certificate vouches for,
// possibly with parts replaced by their digest. Trees are immutable once
// built; build them with the constructors or a Builder.
type Tree struct {
	kind        Kind
	left, right *Tree  // fork: both; labeled: left is the subtree
	label       []byte // labeled
	value       []byte // leaf value, or the 32-byte digest of a pruned subtree

	// sum is Digest's answer once computed: a tree never changes after it
	// is made, and a server that prunes one large tree for many replies
	// would otherwise hash every pruned-away subtree again for each.
	sum atomic.Pointer[[32]byte]
}

var emptyTree = &Tree{kind: KindEmpty}

// Empty returns the empty tree.
func Empty() *Tree { return emptyTree }

// Fork joins two trees.
func Fork(left, right *Tree) *Tree { return &Tree{kind: KindFork, left: left, right: right} }

// Labeled puts a tree under a label.
func Labeled(label []byte, t *Tree) *Tree { return &Tree{kind: KindLabeled, label: label, left: t} }

// Leaf holds a value.
func Leaf(value []byte) *Tree { return &Tree{kind: KindLeaf, value: value} }

// Pruned stands in for a subtree by its digest.
func Pruned(digest [32]byte) *Tree { return &Tree{kind: KindPruned, value: digest[:]} }

// Kind is the node type.
func (t *Tree) Kind() Kind { return t.kind }

// Left is a fork's left tree, or a labeled node's subtree; nil otherwise.
func (t *Tree) Left() *Tree { return t.left }

// Right is a fork's right tree; nil otherwise.
func (t *Tree) Right() *Tree { return t.right }

// Label is a labeled node's label; nil otherwise.
func (t *Tree) Label() []byte { return t.label }

// Value is a leaf's value or a pruned node's digest; nil otherwise.
func (t *Tree) Value() []byte { return t.value }

// Domain separators of the node hashes (interface spec, "Certificate").
var (
	sepEmpty   = []byte("\x11ic-hashtree-empty")
	sepFork    = []byte("\x10ic-hashtree-fork")
	sepLabeled = []byte("\x13ic-hashtree-labeled")
	sepLeaf    = []byte("\x10ic-hashtree-leaf")
)

// Digest reconstructs the root hash, the value a certificate signs. It is
// computed once per node; later calls return it.
func (t *Tree) Digest() [32]byte {
	if p := t.sum.Load(); p != nil {
		return *p
	}
	out := t.digest()
	t.sum.Store(&out)
	return out
}

func (t *Tree) digest() [32]byte {
	var out [32]byte
	switch t.kind {
	case KindEmpty:
		return sha256.Sum256(sepEmpty)
	case KindFork:
		l, r := t.left.Digest(), t.right.Digest()
		h := sha256.New()
		h.Write(sepFork)
		h.Write(l[:])
		h.Write(r[:])
		h.Sum(out[:0])
	case KindLabeled:
		s := t.left.Digest()
		h := sha256.New()
		h.Write(sepLabeled)
		h.Write(t.label)
		h.Write(s[:])
		h.Sum(out[:0])
	case KindLeaf:
		h := sha256.New()
		h.Write(sepLeaf)
		h.Write(t.value)
		h.Sum(out[:0])
	case KindPruned:
		copy(out[:], t.value)
	}
	return out
}

// Status is the outcome of a lookup, as the interface spec defines it.
type Status uint8

// Lookup outcomes.
const (
	// Absent: the path is provably not in the tree.
	Absent Status = iota
	// Found: the path has a value.
	Found
	// Unknown: the path may be in a pruned part of the tree.
	Unknown
	// Error: the path is in the tree but leads to a subtree, not a value.
	Error
)

func (s Status) String() string {
	switch s {
	case Absent:
		return "Absent"
	case Found:
		return "Found"
	case Unknown:
		return "Unknown"
	case Error:
		return "Error"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Lookup is the spec's lookup_path: the value at path and whether it was
// Found, provably Absent, Unknown (pruned) or an Error (a subtree, not a
// value).
func (t *Tree) Lookup(path ...[]byte) ([]byte, Status) {
	sub, st := t.lookupNode(path)
	if st != Found {
		return nil, st
	}
	switch sub.kind {
	case KindEmpty:
		return nil, Absent
	case KindLeaf:
		return sub.value, Found
	case KindPruned:
		return nil, Unknown
	default:
		return nil, Error
	}
}

// LookupString is Lookup with text labels.
func (t *Tree) LookupString(path ...string) ([]byte, Status) { return t.Lookup(Path(path...)...) }

// Subtree returns the node at path itself, whatever its kind; Found means the
// path exists.
func (t *Tree) Subtree(path ...[]byte) (*Tree, Status) { return t.lookupNode(path) }

func (t *Tree) lookupNode(path [][]byte) (*Tree, Status) {
	cur := t
	for _, label := range path {
		next, st := findLabel(label, cur)
		if st != Found {
			return nil, st
		}
		cur = next
	}
	return cur, Found
}

// findLabel follows the spec's find_label over flatten_forks(t).
func findLabel(l []byte, t *Tree) (*Tree, Status) {
	items := t.flatten(nil)
	for _, it := range items {
		if it.kind == KindLabeled && bytes.Equal(it.label, l) {
			return it.left, Found
		}
	}
	firstLabeled, lastLabeled := -1, -1
	for i, it := range items {
		if it.kind != KindLabeled {
			continue
		}
		if firstLabeled < 0 {
			firstLabeled = i
		}
		lastLabeled = i
		if i > 0 && items[i-1].kind == KindLabeled &&
			bytes.Compare(items[i-1].label, l) < 0 && bytes.Compare(l, it.label) < 0 {
			return nil, Absent
		}
	}
	if firstLabeled == 0 && bytes.Compare(l, items[0].label) < 0 {
		return nil, Absent
	}
	if lastLabeled >= 0 && lastLabeled == len(items)-1 && bytes.Compare(items[lastLabeled].label, l) < 0 {
		return nil, Absent
	}
	if len(items) == 0 || (len(items) == 1 && items[0].kind == KindLeaf) {
		return nil, Absent
	}
	return nil, Unknown
}

// flatten appends the non-fork, non-empty nodes under t in order.
func (t *Tree) flatten(out []*Tree) []*Tree {
	switch t.kind {
	case KindEmpty:
		return out
	case KindFork:
		return t.right.flatten(t.left.flatten(out))
	default:
		return append(out, t)
	}
}

// Children returns the labeled children of the forest at t, in order,
// skipping pruned parts: the entries of a map-like node such as
// /canister_ranges/<subnet>.
func (t *Tree) Children() []LabeledChild {
	var out []LabeledChild
	for _, it := range t.flatten(nil) {
		if it.kind == KindLabeled {
			out = append(out, LabeledChild{Label: it.label, Tree: it.left})
		}
	}
	return out
}

// LabeledChild is one entry returned by Children.
type LabeledChild struct {
	Label []byte
	Tree  *Tree
}

// Path converts text labels to a path.
func Path(labels ...string) [][]byte {
	out := make([][]byte, len(labels))
	for i, l := range labels {
		out[i] = []byte(l)
	}
	return out
}

// String renders the tree for debugging, one node per line.
func (t *Tree) String() string {
	var b strings.Builder
	t.write(&b, 0)
	return b.String()
}

func (t *Tree) write(b *strings.Builder, depth int) {
	pad := strings.Repeat("  ", depth)
	switch t.kind {
	case KindEmpty:
		fmt.Fprintf(b, "%sempty\n", pad)
	case KindFork:
		fmt.Fprintf(b, "%sfork\n", pad)
		t.left.write(b, depth+1)
		t.right.write(b, depth+1)
	case KindLabeled:
		fmt.Fprintf(b, "%s%s:\n", pad, printable(t.label))
		t.left.write(b, depth+1)
	case KindLeaf:
		fmt.Fprintf(b, "%sleaf %s\n", pad, printable(t.value))
	case KindPruned:
		fmt.Fprintf(b, "%spruned %x\n", pad, t.value)
	}
}

func printable(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return "0x" + hex.EncodeToString(b)
		}
	}
	return string(b)
}
