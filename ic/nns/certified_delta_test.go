package nns

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/nns/registrypb"
)

// A child of delta that is not an 8-byte version holding a leaf of
// mutations is refused, not skipped; a pruned delta is left to the range
// check.
func TestMalformedChildrenOfDeltaAreRefused(t *testing.T) {
	mutations, _ := proto.Marshal(&registrypb.HighCapacityRegistryAtomicMutateRequest{})
	version := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	tree := func(children ...func(*certificate.Builder)) *certificate.Tree {
		b := certificate.NewBuilder()
		b.MustInsert(certificate.Path("current_version"), leb128.AppendUnsigned(nil, 3))
		for _, c := range children {
			c(b)
		}
		return b.Build()
	}
	delta := func(label []byte, value []byte) func(*certificate.Builder) {
		return func(b *certificate.Builder) { b.MustInsert([][]byte{[]byte("delta"), label}, value) }
	}
	deeper := func(b *certificate.Builder) {
		b.MustInsert([][]byte{[]byte("delta"), version(3), []byte("x")}, mutations)
	}
	for _, tc := range []struct {
		name string
		tree *certificate.Tree
		want string
	}{
		{"a label that is not 8 bytes", tree(delta(version(2), mutations), delta([]byte("three"), mutations)), "labelled 7468726565, which is not an 8-byte version"},
		{"a delta that is a subtree, not a leaf", tree(delta(version(2), mutations), deeper), "delta 3 is a"},
	} {
		root := tc.tree.Digest()
		_, err := readCertifiedTree(MixedHashTreeOf(tc.tree), root[:])
		if !errors.Is(err, ErrNotCertified) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	good := tree(delta(version(2), mutations), delta(version(3), mutations))
	root := good.Digest()
	out, err := readCertifiedTree(MixedHashTreeOf(good), root[:])
	if err != nil || len(out.Deltas) != 2 || out.Deltas[1].Version != 3 {
		t.Fatalf("two well-formed deltas: %+v, %v", out, err)
	}
}
