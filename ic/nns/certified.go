package nns

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"alpnib.dev/ic/certificate"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/nns/registrypb"
)

// The registry certifies its change log: its certified data is the root
// hash of a tree
//
//	current_version -> LEB128(latest version)
//	delta -> <version, 8 bytes big-endian> -> HighCapacityRegistryAtomicMutateRequest
//
// (rs/registry/canister/src/certification.rs), and
// get_certified_changes_since answers with a pruned copy of that tree and
// the certificate. A reader that checks both needs to trust no node.

// ErrNotCertified: a certified registry reply does not verify.
var ErrNotCertified = errors.New("registry reply is not certified")

// ErrInvalidDeltas: a reply whose certificate and tree verify, but whose
// deltas are not the range get_certified_changes_since promises for the
// version asked for. A tree with one delta pruned away still hashes to the
// certified root, so only this check sees the gap. It is an ErrNotCertified:
// the reply does not certify what was asked.
var ErrInvalidDeltas = fmt.Errorf("%w: its deltas do not form the range asked for", ErrNotCertified)

// CertifiedDelta is the mutations of one registry version.
type CertifiedDelta struct {
	Version   uint64
	Mutations []*registrypb.HighCapacityRegistryMutation
}

// CertifiedChanges is a verified get_certified_changes_since reply.
type CertifiedChanges struct {
	LatestVersion uint64
	Deltas        []CertifiedDelta // in version order
}

// VerifyCertifiedResponse checks a get_certified_changes_since reply (a
// protobuf CertifiedResponse) to a request for the changes after since: the
// certificate under v, for the registry canister, and the hash tree against
// the certified data it signs; then reads the latest version and the deltas
// from the tree and checks they are the range asked for (checkVersionRange).
func VerifyCertifiedResponse(raw []byte, since uint64, v *certificate.Verifier) (*CertifiedChanges, error) {
	var resp registrypb.CertifiedResponse
	if err := decode(raw, &resp); err != nil {
		return nil, err
	}
	return VerifyCertifiedTree(resp.Certificate, resp.HashTree, since, v)
}

// VerifyCertifiedTree is VerifyCertifiedResponse for a certificate and tree
// already apart.
func VerifyCertifiedTree(cert []byte, mixed *registrypb.MixedHashTree, since uint64, v *certificate.Verifier) (*CertifiedChanges, error) {
	out, err := verifyCertifiedTree(cert, mixed, v)
	if err != nil {
		return nil, err
	}
	if err := checkVersionRange(since, out); err != nil {
		return nil, err
	}
	return out, nil
}

// checkVersionRange holds a verified reply to what
// get_certified_changes_since promises for the changes after since, the
// postconditions of validate_version_range upstream
// (rs/registry/nns_data_provider/src/certification.rs): the first delta is
// since+1 and the rest follow without a gap; and when the registry is past
// since there is at least one delta (a reply may stop short of the latest
// version, a page at a time). A delta past current_version is refused too.
// A registry behind since is not this check's business: what a reader does
// about it is its own policy.
func checkVersionRange(since uint64, ch *CertifiedChanges) error {
	prev := since
	for _, d := range ch.Deltas {
		if d.Version != prev+1 {
			return fmt.Errorf("%w: version %d follows %d (the range is not continuous)", ErrInvalidDeltas, d.Version, prev)
		}
		prev = d.Version
	}
	if prev > ch.LatestVersion {
		return fmt.Errorf("%w: a delta at %d is past the current version %d", ErrInvalidDeltas, prev, ch.LatestVersion)
	}
	if prev == since && ch.LatestVersion > since {
		return fmt.Errorf("%w: the current version %d is newer than the %d asked for, but the reply has no delta", ErrInvalidDeltas, ch.LatestVersion, since)
	}
	return nil
}

func verifyCertifiedTree(cert []byte, mixed *registrypb.MixedHashTree, v *certificate.Verifier) (*CertifiedChanges, error) {
	c, err := v.Verify(cert, certificate.ForCanister(registryID))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotCertified, err)
	}
	data, st := c.Tree.Lookup([]byte("canister"), registryID.Bytes(), []byte("certified_data"))
	if st != certificate.Found {
		return nil, fmt.Errorf("%w: the certificate's /canister/%s/certified_data is %s", ErrNotCertified, registryID, st)
	}
	return readCertifiedTree(mixed, data)
}

// readCertifiedTree checks the tree's root hash against the certified data
// and reads the latest version and the deltas from it.
func readCertifiedTree(mixed *registrypb.MixedHashTree, certified []byte) (*CertifiedChanges, error) {
	tree, err := treeOf(mixed, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: hash tree: %v", ErrNotCertified, err)
	}
	if root := tree.Digest(); !bytes.Equal(root[:], certified) {
		return nil, fmt.Errorf("%w: the hash tree's root %x is not the certified data %x", ErrNotCertified, root, certified)
	}
	out := &CertifiedChanges{}
	leaf, st := tree.Lookup([]byte("current_version"))
	if st != certificate.Found {
		return nil, fmt.Errorf("%w: current_version is %s", ErrNotCertified, st)
	}
	if out.LatestVersion, _, err = leb128.Unsigned(leaf); err != nil {
		return nil, fmt.Errorf("%w: current_version: %v", ErrNotCertified, err)
	}
	deltas, st := tree.Subtree([]byte("delta"))
	if st == certificate.Absent || st == certificate.Unknown {
		// No delta, or all of them pruned away (a reply to a reader
		// already at the latest version): upstream's reader takes either
		// as none (serde default, rs/registry/nns_data_provider/src/
		// certification.rs). Whether none is right is checkVersionRange's
		// question.
		return out, nil
	}
	if st != certificate.Found {
		return nil, fmt.Errorf("%w: delta is %s", ErrNotCertified, st)
	}
	for _, ch := range deltas.Children() {
		// Every child of delta is a version (8 bytes, big-endian) holding
		// a mutation request; one pruned away is left to checkVersionRange
		// (a gap in the range). Anything else is not what the registry
		// certifies, and is refused rather than skipped.
		if len(ch.Label) != 8 {
			return nil, fmt.Errorf("%w: delta has a child labelled %x, which is not an 8-byte version", ErrNotCertified, ch.Label)
		}
		switch ch.Tree.Kind() {
		case certificate.KindPruned:
			continue
		case certificate.KindLeaf:
		default:
			return nil, fmt.Errorf("%w: delta %d is a %s, not a leaf holding its mutations", ErrNotCertified, binary.BigEndian.Uint64(ch.Label), ch.Tree.Kind())
		}
		value, _ := ch.Tree.Lookup()
		var req registrypb.HighCapacityRegistryAtomicMutateRequest
		if err := proto.Unmarshal(value, &req); err != nil {
			return nil, fmt.Errorf("delta %x: %w", ch.Label, err)
		}
		out.Deltas = append(out.Deltas, CertifiedDelta{Version: binary.BigEndian.Uint64(ch.Label), Mutations: req.Mutations})
	}
	return out, nil
}

// maxTreeDepth bounds the recursion over a hostile tree.
const maxTreeDepth = 128

// treeOf turns the protobuf hash tree into a certificate.Tree.
func treeOf(m *registrypb.MixedHashTree, depth int) (*certificate.Tree, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("deeper than %d", maxTreeDepth)
	}
	switch t := m.GetTreeEnum().(type) {
	case *registrypb.MixedHashTree_Empty:
		return certificate.Empty(), nil
	case *registrypb.MixedHashTree_Fork_:
		l, err := treeOf(t.Fork.GetLeftTree(), depth+1)
		if err != nil {
			return nil, err
		}
		r, err := treeOf(t.Fork.GetRightTree(), depth+1)
		if err != nil {
			return nil, err
		}
		return certificate.Fork(l, r), nil
	case *registrypb.MixedHashTree_Labeled_:
		sub, err := treeOf(t.Labeled.GetSubtree(), depth+1)
		if err != nil {
			return nil, err
		}
		return certificate.Labeled(t.Labeled.GetLabel(), sub), nil
	case *registrypb.MixedHashTree_LeafData:
		return certificate.Leaf(t.LeafData), nil
	case *registrypb.MixedHashTree_PrunedDigest:
		if len(t.PrunedDigest) != 32 {
			return nil, fmt.Errorf("pruned digest of %d bytes", len(t.PrunedDigest))
		}
		return certificate.Pruned([32]byte(t.PrunedDigest)), nil
	}
	return nil, errors.New("a node with no tree")
}

// MixedHashTreeOf is treeOf's inverse: the protobuf form of a hash tree, as
// the registry canister sends it.
func MixedHashTreeOf(t *certificate.Tree) *registrypb.MixedHashTree {
	switch t.Kind() {
	case certificate.KindFork:
		return &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_Fork_{Fork: &registrypb.MixedHashTree_Fork{
			LeftTree: MixedHashTreeOf(t.Left()), RightTree: MixedHashTreeOf(t.Right())}}}
	case certificate.KindLabeled:
		return &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_Labeled_{Labeled: &registrypb.MixedHashTree_Labeled{
			Label: t.Label(), Subtree: MixedHashTreeOf(t.Left())}}}
	case certificate.KindLeaf:
		return &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_LeafData{LeafData: t.Value()}}
	case certificate.KindPruned:
		return &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_PrunedDigest{PrunedDigest: t.Value()}}
	}
	return &registrypb.MixedHashTree{TreeEnum: &registrypb.MixedHashTree_Empty{Empty: &emptypb.Empty{}}}
}

// GetCertifiedChangesSince reads the changes after version from
// get_certified_changes_since and verifies them under v (the root key the
// caller trusts): no node has to be trusted for the answer. Chunked values
// are fetched and checked against their certified hashes.
func (r RegistryClient) GetCertifiedChangesSince(ctx context.Context, version uint64, v *certificate.Verifier) (*CertifiedChanges, error) {
	arg, err := proto.Marshal(&registrypb.RegistryGetChangesSinceRequest{Version: version})
	if err != nil {
		return nil, fmt.Errorf("get_certified_changes_since %d: encode request: %w", version, err)
	}
	raw, err := r.Caller.Query(ctx, registryID, "get_certified_changes_since", arg)
	if err != nil {
		return nil, fmt.Errorf("get_certified_changes_since %d: %w", version, err)
	}
	out, err := VerifyCertifiedResponse(raw, version, v)
	if err != nil {
		return nil, fmt.Errorf("get_certified_changes_since %d: %w", version, err)
	}
	for _, d := range out.Deltas {
		for _, m := range d.Mutations {
			if keys := m.GetLargeValueChunkKeys(); keys != nil {
				value, err := r.dechunk(ctx, keys)
				if err != nil {
					return nil, fmt.Errorf("get_certified_changes_since %d: %s: %w", version, m.Key, err)
				}
				m.Content = &registrypb.HighCapacityRegistryMutation_Value{Value: value}
			}
		}
	}
	return out, nil
}
