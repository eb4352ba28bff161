package certificate

import (
	"bytes"
	"fmt"
	"slices"
)

// Builder assembles a well-formed hash tree from path/value pairs, the way a
// replica lays out its state tree: labels in increasing byte order, siblings
// joined by balanced forks. A local replica uses it to mint the trees it
// certifies:
//
//	b := certificate.NewBuilder()
//	b.Insert(certificate.Path("time"), leb128Time)
//	b.Insert([][]byte{[]byte("request_status"), rid[:], []byte("status")}, []byte("replied"))
//	tree := b.Build()
//
// then Prune the tree to what a read_state asked for and Sign it.
type Builder struct {
	root *bnode
}

// bnode is a leaf (children == nil, value set) or an interior map.
type bnode struct {
	value    []byte
	isLeaf   bool
	children map[string]*bnode
}

// NewBuilder returns an empty builder.
func NewBuilder() *Builder { return &Builder{root: &bnode{children: map[string]*bnode{}}} }

// Insert sets the value at path. It fails if the path runs through an
// existing value or would replace a subtree with a value.
func (b *Builder) Insert(path [][]byte, value []byte) error {
	if len(path) == 0 {
		return fmt.Errorf("insert into hash tree: empty path")
	}
	n := b.root
	for i, label := range path {
		if n.isLeaf {
			return fmt.Errorf("insert %s: %s is a value", pathString(path), pathString(path[:i]))
		}
		child, ok := n.children[string(label)]
		last := i == len(path)-1
		switch {
		case !ok && last:
			n.children[string(label)] = &bnode{isLeaf: true, value: bytes.Clone(value)}
			return nil
		case !ok:
			child = &bnode{children: map[string]*bnode{}}
			n.children[string(label)] = child
		case last:
			if !child.isLeaf {
				return fmt.Errorf("insert %s: path holds a subtree", pathString(path))
			}
			child.value = bytes.Clone(value)
			return nil
		}
		n = child
	}
	return nil
}

// MustInsert is Insert for paths known to be consistent; it panics on error.
func (b *Builder) MustInsert(path [][]byte, value []byte) {
	if err := b.Insert(path, value); err != nil {
		panic(err)
	}
}

// Build returns the hash tree of everything inserted so far.
func (b *Builder) Build() *Tree { return b.root.build() }

func (n *bnode) build() *Tree {
	if n.isLeaf {
		return Leaf(n.value)
	}
	labels := make([]string, 0, len(n.children))
	for l := range n.children {
		labels = append(labels, l)
	}
	slices.Sort(labels) // Go string order is byte order
	items := make([]*Tree, len(labels))
	for i, l := range labels {
		items[i] = Labeled([]byte(l), n.children[l].build())
	}
	return balanced(items)
}

func balanced(items []*Tree) *Tree {
	switch len(items) {
	case 0:
		return Empty()
	case 1:
		return items[0]
	}
	mid := len(items) / 2
	return Fork(balanced(items[:mid]), balanced(items[mid:]))
}

// Prune keeps the given paths of t and replaces everything else by digests,
// keeping the neighbouring labels that prove a missing path absent. The
// result has the same Digest as t, so a certificate signed over t stays
// valid. A path that ends at a subtree keeps that whole subtree.
func Prune(t *Tree, paths ...[][]byte) *Tree {
	out, _ := prune(t, paths)
	return out
}

// prune returns the pruned tree and whether anything below t was kept.
func prune(t *Tree, paths [][][]byte) (*Tree, bool) {
	for _, p := range paths {
		if len(p) == 0 {
			return t, true
		}
	}
	if len(paths) == 0 {
		return Pruned(t.Digest()), false
	}
	switch t.kind {
	case KindEmpty, KindLeaf, KindPruned:
		// Nothing below to choose from: the node itself proves what it can.
		return t, true
	}
	items := t.flatten(nil)
	want := make(map[int][][][]byte) // labeled item index -> remaining paths
	labelOnly := make(map[int]bool)  // neighbours kept to prove absence
	labeled := labeledAt(items)
	for _, p := range paths {
		i, found := searchLabel(items, labeled, p[0])
		if found {
			want[i] = append(want[i], p[1:])
			continue
		}
		// i is where p[0] would go: keep the labels either side.
		if j := prevLabeled(items, i-1); j >= 0 {
			labelOnly[j] = true
		}
		if j := nextLabeled(items, i); j >= 0 {
			labelOnly[j] = true
		}
	}
	idx := 0
	var walk func(n *Tree) (*Tree, bool)
	walk = func(n *Tree) (*Tree, bool) {
		switch n.kind {
		case KindFork:
			l, keptL := walk(n.left)
			r, keptR := walk(n.right)
			if !keptL && !keptR {
				return Pruned(n.Digest()), false
			}
			return Fork(l, r), true
		case KindEmpty:
			return n, false
		}
		i := idx
		idx++
		switch n.kind {
		case KindPruned:
			return n, false
		case KindLeaf:
			return n, true
		}
		if sub, ok := want[i]; ok {
			child, _ := prune(n.left, sub)
			return Labeled(n.label, child), true
		}
		if labelOnly[i] {
			return Labeled(n.label, Pruned(n.left.Digest())), true
		}
		return Pruned(n.Digest()), false
	}
	return walk(t)
}

// searchLabel finds label among the labeled items (sorted in a well-formed
// tree); if absent it returns the index where it would be inserted.
// labeledAt lists the positions of the labeled items, whose labels are in
// order (a well-formed tree's are).
func labeledAt(items []*Tree) []int {
	out := make([]int, 0, len(items))
	for i, it := range items {
		if it.kind == KindLabeled {
			out = append(out, i)
		}
	}
	return out
}

// searchLabel finds label among the labeled items (labeled is labeledAt of
// items), by binary search: the item's index and true, or the index of the
// first labeled item after it (len(items) when none) and false. A prune for
// thousands of paths through a node of thousands of labels (a registry
// reply of many deltas) was quadratic with a linear scan.
func searchLabel(items []*Tree, labeled []int, label []byte) (int, bool) {
	k, found := slices.BinarySearchFunc(labeled, label, func(i int, l []byte) int { return bytes.Compare(items[i].label, l) })
	if k == len(labeled) {
		return len(items), false
	}
	return labeled[k], found
}

func prevLabeled(items []*Tree, i int) int {
	for ; i >= 0; i-- {
		if items[i].kind == KindLabeled {
			return i
		}
	}
	return -1
}

func nextLabeled(items []*Tree, i int) int {
	for ; i < len(items); i++ {
		if items[i].kind == KindLabeled {
			return i
		}
	}
	return -1
}

func pathString(p [][]byte) string {
	var b bytes.Buffer
	for _, l := range p {
		b.WriteByte('/')
		b.WriteString(printable(l))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
