// Package certificate verifies (and, for local replicas and tests, mints)
// Internet Computer certificates: a hash tree of state, a BLS12-381 signature
// over its root hash by a subnet, and for subnets other than the root one a
// delegation, which is the root subnet's certificate of that subnet's public
// key and canister ranges.
//
// Verification follows the interface spec's verify_cert: reconstruct the
// root hash, check the signature under the delegated or root key, check the
// delegation covers the canister asked about, and check the certificate's
// /time is recent. A delegation is checked once and remembered per subnet, so
// each further certificate costs one BLS verification.
package certificate

import (
	"errors"
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"

	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// DomainStateRoot prefixes the root hash in the message a subnet signs.
const DomainStateRoot = "\x0Dic-state-root"

// Certificate is a decoded certificate. Its contents mean nothing until a
// Verifier has checked it.
type Certificate struct {
	Tree       *Tree
	Signature  []byte
	Delegation *Delegation
}

// Delegation is the root subnet's certificate that a subnet holds a key and
// may speak for some canister ranges.
type Delegation struct {
	SubnetID principal.Principal
	// Certificate is the CBOR of the root subnet's certificate, kept verbatim
	// because it is what is signed and what the cache is keyed on.
	Certificate []byte
}

// Errors a verification can end in; compare with errors.Is.
var (
	ErrMalformed     = errors.New("malformed certificate")
	ErrDelegation    = errors.New("invalid certificate delegation")
	ErrNotAuthorized = errors.New("certificate's subnet is not authorized for this canister")
	ErrStale         = errors.New("certificate time is outside the freshness window")
)

type wireCertificate struct {
	Tree       cbor.RawMessage `cbor:"tree"`
	Signature  []byte          `cbor:"signature"`
	Delegation *wireDelegation `cbor:"delegation,omitempty"`
}

type wireDelegation struct {
	SubnetID    []byte `cbor:"subnet_id"`
	Certificate []byte `cbor:"certificate"`
}

// Decode parses a CBOR certificate (self-describe tag optional) without
// verifying it.
func Decode(data []byte) (*Certificate, error) {
	var w wireCertificate
	if err := cborx.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if w.Tree == nil || w.Signature == nil {
		return nil, fmt.Errorf("%w: tree or signature missing", ErrMalformed)
	}
	tree, err := DecodeTree(w.Tree)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	c := &Certificate{Tree: tree, Signature: w.Signature}
	if w.Delegation != nil {
		id, err := principal.FromBytes(w.Delegation.SubnetID)
		if err != nil {
			return nil, fmt.Errorf("%w: delegation subnet_id: %v", ErrMalformed, err)
		}
		if w.Delegation.Certificate == nil {
			return nil, fmt.Errorf("%w: delegation without certificate", ErrMalformed)
		}
		c.Delegation = &Delegation{SubnetID: id, Certificate: w.Delegation.Certificate}
	}
	return c, nil
}

// Marshal encodes the certificate as self-described CBOR.
func (c *Certificate) Marshal() ([]byte, error) {
	tree, _ := c.Tree.MarshalCBOR()
	w := wireCertificate{Tree: tree, Signature: c.Signature}
	if c.Delegation != nil {
		w.Delegation = &wireDelegation{SubnetID: c.Delegation.SubnetID.Bytes(), Certificate: c.Delegation.Certificate}
	}
	b, err := cborx.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode certificate: %w", err)
	}
	return b, nil
}

// SignedMessage is what the subnet signed: "\x0Dic-state-root" || root hash.
func (c *Certificate) SignedMessage() []byte {
	d := c.Tree.Digest()
	return append([]byte(DomainStateRoot), d[:]...)
}

// Time is the certificate's /time leaf.
func (c *Certificate) Time() (time.Time, error) { return TreeTime(c.Tree) }

// TreeTime reads the /time leaf of a state tree (LEB128 nanoseconds).
func TreeTime(t *Tree) (time.Time, error) {
	v, st := t.LookupString("time")
	if st != Found {
		return time.Time{}, fmt.Errorf("%w: /time is %s", ErrMalformed, st)
	}
	ns, n, err := leb128.Unsigned(v)
	if err != nil || n != len(v) {
		return time.Time{}, fmt.Errorf("%w: /time is not a LEB128 nat", ErrMalformed)
	}
	if ns > 1<<63-1 {
		return time.Time{}, fmt.Errorf("%w: /time out of range", ErrMalformed)
	}
	return time.Unix(0, int64(ns)).UTC(), nil
}

// Sign certifies tree with sk: the signature over "\x0Dic-state-root" ||
// tree.Digest(). Pass the delegation a subnet key needs (from Delegate), or
// nil when sk is the root key. This is what a local replica does for every
// response that carries a certificate.
func Sign(sk *SecretKey, tree *Tree, delegation *Delegation) (*Certificate, error) {
	c := &Certificate{Tree: tree, Delegation: delegation}
	sig, err := sk.SignMessage(c.SignedMessage())
	if err != nil {
		return nil, err
	}
	c.Signature = sig
	return c, nil
}

// CanisterRange is an inclusive range of canister ids, compared as bytes.
type CanisterRange struct {
	From, To principal.Principal
}

// Contains reports whether id lies in the range.
func (r CanisterRange) Contains(id principal.Principal) bool {
	return r.From.Compare(id) <= 0 && id.Compare(r.To) <= 0
}

// Delegate makes the delegation that lets subnetKey certify for ranges: a
// certificate signed by rootKey over a tree holding /time,
// /subnet/<id>/public_key and /subnet/<id>/canister_ranges.
func Delegate(rootKey *SecretKey, subnetID principal.Principal, subnetKey *PublicKey, ranges []CanisterRange, at time.Time) (*Delegation, error) {
	return DelegateIn(FlatRanges, rootKey, subnetID, subnetKey, ranges, at)
}

// DelegateIn is Delegate with the ranges in the given layout: FlatRanges
// as /subnet/<id>/canister_ranges (what a v3 call or v2 read_state answer
// carries), TreeRanges as one shard /canister_ranges/<id>/<first range's
// start> (what a v4 call or v3 read_state answer carries), EitherLayout as
// both.
func DelegateIn(layout RangesLayout, rootKey *SecretKey, subnetID principal.Principal, subnetKey *PublicKey, ranges []CanisterRange, at time.Time) (*Delegation, error) {
	b := NewBuilder()
	if err := b.Insert(Path("time"), leb128.AppendUnsigned(nil, uint64(at.UnixNano()))); err != nil {
		return nil, err
	}
	sid := subnetID.Bytes()
	if err := b.Insert([][]byte{[]byte("subnet"), sid, []byte("public_key")}, subnetKey.DER()); err != nil {
		return nil, err
	}
	enc, err := EncodeRanges(ranges)
	if err != nil {
		return nil, err
	}
	if layout != TreeRanges {
		if err := b.Insert([][]byte{[]byte("subnet"), sid, []byte("canister_ranges")}, enc); err != nil {
			return nil, err
		}
	}
	if layout != FlatRanges && len(ranges) > 0 {
		if err := b.Insert([][]byte{[]byte("canister_ranges"), sid, ranges[0].From.Bytes()}, enc); err != nil {
			return nil, err
		}
	}
	cert, err := Sign(rootKey, b.Build(), nil)
	if err != nil {
		return nil, err
	}
	raw, err := cert.Marshal()
	if err != nil {
		return nil, err
	}
	return &Delegation{SubnetID: subnetID, Certificate: raw}, nil
}

// EncodeRanges is the leaf format of canister_ranges:
// CBOR 55799([[from, to], ...]).
func EncodeRanges(ranges []CanisterRange) ([]byte, error) {
	pairs := make([][2][]byte, len(ranges))
	for i, r := range ranges {
		pairs[i] = [2][]byte{r.From.Bytes(), r.To.Bytes()}
	}
	return cborx.Marshal(pairs)
}

// DecodeRanges parses a canister_ranges leaf.
func DecodeRanges(leaf []byte) ([]CanisterRange, error) {
	var pairs [][][]byte
	if err := cborx.Unmarshal(leaf, &pairs); err != nil {
		return nil, err
	}
	out := make([]CanisterRange, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("range %d has %d ends", i, len(p))
		}
		from, err := principal.FromBytes(p[0])
		if err != nil {
			return nil, err
		}
		to, err := principal.FromBytes(p[1])
		if err != nil {
			return nil, err
		}
		out[i] = CanisterRange{From: from, To: to}
	}
	return out, nil
}
