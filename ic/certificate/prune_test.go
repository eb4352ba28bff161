package certificate

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPruningAnswersEveryAskedPathLikeTheFullTree builds random state trees,
// prunes them to random paths (present and absent, leaves and subtrees) and
// checks that the pruned tree keeps the digest and gives the full tree's
// answer for every path asked.
func TestPruningAnswersEveryAskedPathLikeTheFullTree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	label := func() []byte { return []byte{byte('a' + r.IntN(6))} }
	randomPath := func() [][]byte {
		p := make([][]byte, 1+r.IntN(3))
		for i := range p {
			p[i] = label()
		}
		return p
	}
	for round := range 300 {
		b := NewBuilder()
		for range 1 + r.IntN(20) {
			_ = b.Insert(randomPath(), []byte(fmt.Sprint(r.IntN(1000)))) // conflicts are fine to skip
		}
		full := b.Build()
		asked := make([][][]byte, 1+r.IntN(4))
		for i := range asked {
			asked[i] = randomPath()
		}
		pruned := Prune(full, asked...)
		if pruned.Digest() != full.Digest() {
			t.Fatalf("round %d: digest changed", round)
		}
		for _, p := range asked {
			wantV, wantSt := full.Lookup(p...)
			gotV, gotSt := pruned.Lookup(p...)
			if gotSt != wantSt || !bytes.Equal(gotV, wantV) {
				t.Fatalf("round %d: %s is %s %q in the pruned tree, %s %q in the full one\nfull:\n%s\npruned:\n%s",
					round, pathString(p), gotSt, gotV, wantSt, wantV, full, pruned)
			}
		}
	}
}

// A registry reply prunes a node of tens of thousands of labels to
// thousands of paths; the label search is a binary search, so this is
// n log n, not n × paths.
func BenchmarkPruneThousandsOfPathsThroughOneNode(b *testing.B) {
	bl := NewBuilder()
	var paths [][][]byte
	for i := range 50000 {
		label := []byte(fmt.Sprintf("%08d", i))
		bl.MustInsert([][]byte{[]byte("delta"), label}, []byte("mutations"))
		if i >= 25000 && i < 37500 {
			paths = append(paths, [][]byte{[]byte("delta"), label})
		}
	}
	tree := bl.Build()
	b.ResetTimer()
	for range b.N {
		Prune(tree, paths...)
	}
}

// A tree's digest is kept once computed; decoding another tree into the
// same value must not keep the old one.
func TestATreeDecodedOverAnotherHasItsOwnDigest(t *testing.T) {
	a := Labeled([]byte("a"), Leaf([]byte("1")))
	b := Fork(Labeled([]byte("b"), Leaf([]byte("2"))), Labeled([]byte("c"), Leaf([]byte("3"))))
	rawA, _ := a.MarshalCBOR()
	rawB, _ := b.MarshalCBOR()
	var got Tree
	if err := got.UnmarshalCBOR(rawA); err != nil {
		t.Fatal(err)
	}
	if got.Digest() != a.Digest() {
		t.Fatal("decoded a: digest differs")
	}
	if err := got.UnmarshalCBOR(rawB); err != nil {
		t.Fatal(err)
	}
	if got.Digest() != b.Digest() {
		t.Fatal("decoded b over a: kept a's digest")
	}
}
