package certificate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"alpnib.dev/ic/principal"
)

// DefaultMaxAge is how far a certificate's /time may be from now, either way,
// unless Options say otherwise. Five minutes is the IC's maximum ingress
// expiry, which is what the reference agents use too.
const DefaultMaxAge = 5 * time.Minute

// DefaultDelegationMaxAge is how old a delegation's certificate may be. The
// root subnet signs a delegation once and the subnet hands it out with every
// answer until it is renewed, so it is older than the answer; agent-js
// accepts one up to 30 days old (icp-js-core PR #763), and so does alp. A
// delegation certificate from the future is refused with the outer window.
const DefaultDelegationMaxAge = 30 * 24 * time.Hour

// maxCachedDelegations bounds the delegation cache: there are a few dozen
// subnets, and a delegation is renewed now and then.
const maxCachedDelegations = 256

// Options tune a Verifier.
type Options struct {
	// Now is the clock freshness is judged by; time.Now when nil.
	Now func() time.Time
	// MaxAge is the freshness window; DefaultMaxAge when zero.
	MaxAge time.Duration
	// DelegationMaxAge is how old a delegation's certificate may be;
	// DefaultDelegationMaxAge when zero.
	DelegationMaxAge time.Duration
	// SkipFreshness turns the /time check off, for replaying recorded
	// certificates.
	SkipFreshness bool
}

// Verifier checks certificates against one root key. It is safe for
// concurrent use and remembers the delegations it has verified.
type Verifier struct {
	root *PublicKey
	opts Options

	mu    sync.Mutex
	cache map[[32]byte]*subnetAuthority
}

// subnetAuthority is what a verified delegation establishes.
type subnetAuthority struct {
	subnet principal.Principal
	key    *PublicKey
	// ranges are what SubnetRanges reads (either layout); flat and tree are
	// each layout on its own, nil when the delegation does not carry it.
	ranges     []CanisterRange
	flat, tree []CanisterRange
	// at is the delegation certificate's /time, checked at every use
	// (the authority is cached by bytes, freshness is not).
	at time.Time
}

// NewVerifier returns a verifier for certificates under rootKeyDER (the DER
// form /api/v2/status serves; see MainnetRootKeyDER).
func NewVerifier(rootKeyDER []byte, opts Options) (*Verifier, error) {
	root, err := ParsePublicKeyDER(rootKeyDER)
	if err != nil {
		return nil, fmt.Errorf("root key: %w", err)
	}
	return &Verifier{root: root, opts: opts, cache: map[[32]byte]*subnetAuthority{}}, nil
}

// RootKey is the key the verifier trusts.
func (v *Verifier) RootKey() *PublicKey { return v.root }

// Scope says whom a certificate must be authorized for: a canister (the
// effective canister id of the request) or a subnet (a subnet read_state),
// and for a canister, where the delegation's canister ranges must be read.
type Scope struct {
	canister *principal.Principal
	subnet   *principal.Principal
	layout   RangesLayout
}

// RangesLayout says where in a delegation's certificate the subnet's
// canister ranges are read. Which one applies depends on the endpoint that
// answered (docs/decisions.md, "HTTP interface versions").
type RangesLayout uint8

const (
	// EitherLayout reads /subnet/<id>/canister_ranges when present, else
	// the /canister_ranges/<id> shards: for certificates whose endpoint is
	// not known, such as a canister's certified data.
	EitherLayout RangesLayout = iota
	// FlatRanges reads only /subnet/<id>/canister_ranges, as the spec
	// requires for /api/v3/canister/…/call and /api/v2/canister/…/read_state.
	FlatRanges
	// TreeRanges reads only the leaves under /canister_ranges/<id>, as the
	// spec requires for /api/v4/canister/…/call,
	// /api/v3/canister/…/read_state and the v3 query's node keys.
	TreeRanges
)

func (l RangesLayout) String() string {
	switch l {
	case FlatRanges:
		return "/subnet/<id>/canister_ranges"
	case TreeRanges:
		return "/canister_ranges/<id>"
	}
	return "either layout"
}

// ForCanister scopes a verification to a canister: a delegated subnet must
// list it in its canister ranges, in either layout.
func ForCanister(id principal.Principal) Scope { return Scope{canister: &id} }

// ForCanisterIn is ForCanister with the ranges read from one layout only.
func ForCanisterIn(id principal.Principal, layout RangesLayout) Scope {
	return Scope{canister: &id, layout: layout}
}

// ForSubnet scopes a verification to a subnet: a delegation must be for it.
func ForSubnet(id principal.Principal) Scope { return Scope{subnet: &id} }

// AnyScope accepts any delegation; only for callers that check scope
// themselves.
func AnyScope() Scope { return Scope{} }

// Verify decodes data and checks it fully: signature, delegation, scope and
// freshness. The returned certificate's tree can be trusted.
func (v *Verifier) Verify(data []byte, scope Scope) (*Certificate, error) {
	c, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if err := v.VerifyDecoded(c, scope); err != nil {
		return nil, err
	}
	return c, nil
}

// VerifyDecoded is Verify for a certificate already decoded.
func (v *Verifier) VerifyDecoded(c *Certificate, scope Scope) error {
	key := v.root
	if c.Delegation != nil {
		auth, err := v.authority(c.Delegation)
		if err != nil {
			return err
		}
		if err := auth.allows(scope); err != nil {
			return err
		}
		if !v.opts.SkipFreshness {
			if err := v.delegationFresh(auth); err != nil {
				return err
			}
		}
		key = auth.key
	}
	if err := key.VerifySignature(c.SignedMessage(), c.Signature); err != nil {
		return fmt.Errorf("verify certificate: %w", err)
	}
	if v.opts.SkipFreshness {
		return nil
	}
	return v.checkFresh(c.Tree)
}

func (v *Verifier) now() time.Time {
	if v.opts.Now != nil {
		return v.opts.Now()
	}
	return time.Now()
}

func (v *Verifier) maxAge() time.Duration {
	if v.opts.MaxAge == 0 {
		return DefaultMaxAge
	}
	return v.opts.MaxAge
}

// delegationFresh refuses a delegation whose certificate is older than
// DelegationMaxAge or further in the future than the outer window allows.
func (v *Verifier) delegationFresh(a *subnetAuthority) error {
	maxAge := v.opts.DelegationMaxAge
	if maxAge == 0 {
		maxAge = DefaultDelegationMaxAge
	}
	now := v.now()
	if d := now.Sub(a.at); d > maxAge || d < -v.maxAge() {
		return fmt.Errorf("%w: the delegation of subnet %s was certified at %s, now %s (at most %s old, %s ahead)", ErrStale,
			a.subnet, a.at.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), maxAge, v.maxAge())
	}
	return nil
}

func (v *Verifier) checkFresh(t *Tree) error {
	at, err := TreeTime(t)
	if err != nil {
		return err
	}
	now, maxAge := v.now(), v.maxAge()
	if d := now.Sub(at); d > maxAge || d < -maxAge {
		return fmt.Errorf("%w: certificate time %s, now %s (window ±%s)", ErrStale,
			at.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), maxAge)
	}
	return nil
}

func (a *subnetAuthority) allows(s Scope) error {
	switch {
	case s.canister != nil:
		ranges := a.ranges
		switch s.layout {
		case FlatRanges:
			ranges = a.flat
		case TreeRanges:
			ranges = a.tree
		}
		if ranges == nil {
			return fmt.Errorf("%w: the delegation of subnet %s has no canister ranges at %s", ErrNotAuthorized, a.subnet, s.layout)
		}
		for _, r := range ranges {
			if r.Contains(*s.canister) {
				return nil
			}
		}
		return fmt.Errorf("%w: canister %s is outside the ranges of subnet %s at %s", ErrNotAuthorized, *s.canister, a.subnet, s.layout)
	case s.subnet != nil:
		if *s.subnet != a.subnet {
			return fmt.Errorf("%w: certificate is from subnet %s, not %s", ErrNotAuthorized, a.subnet, *s.subnet)
		}
	}
	return nil
}

// authority verifies a delegation, or returns the cached result of having
// done so for the same bytes.
func (v *Verifier) authority(d *Delegation) (*subnetAuthority, error) {
	h := sha256.New()
	h.Write([]byte{byte(len(d.SubnetID.Bytes()))})
	h.Write(d.SubnetID.Bytes())
	h.Write(d.Certificate)
	var k [32]byte
	h.Sum(k[:0])

	v.mu.Lock()
	a, ok := v.cache[k]
	v.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := v.verifyDelegation(d)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if len(v.cache) >= maxCachedDelegations {
		for old := range v.cache { // drop an arbitrary entry
			delete(v.cache, old)
			break
		}
	}
	v.cache[k] = a
	v.mu.Unlock()
	return a, nil
}

// verifyDelegation is the spec's check_delegation plus reading the subnet's
// key, canister ranges and the certificate's /time (a delegation without
// one is malformed; its freshness is judged at each use).
func (v *Verifier) verifyDelegation(d *Delegation) (*subnetAuthority, error) {
	c, err := Decode(d.Certificate)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDelegation, err)
	}
	if c.Delegation != nil {
		return nil, fmt.Errorf("%w: delegation certificate is itself delegated", ErrDelegation)
	}
	if err := v.root.VerifySignature(c.SignedMessage(), c.Signature); err != nil {
		return nil, fmt.Errorf("%w: root signature: %v", ErrDelegation, err)
	}
	sid := d.SubnetID.Bytes()
	der, st := c.Tree.Lookup([]byte("subnet"), sid, []byte("public_key"))
	if st != Found {
		return nil, fmt.Errorf("%w: /subnet/%s/public_key is %s", ErrDelegation, d.SubnetID, st)
	}
	key, err := ParsePublicKeyDER(der)
	if err != nil {
		return nil, fmt.Errorf("%w: subnet %s: %v", ErrDelegation, d.SubnetID, err)
	}
	flat, err := FlatSubnetRanges(c.Tree, sid)
	if err != nil {
		return nil, fmt.Errorf("%w: subnet %s canister ranges: %v", ErrDelegation, d.SubnetID, err)
	}
	tree, err := TreeSubnetRanges(c.Tree, sid)
	if err != nil {
		return nil, fmt.Errorf("%w: subnet %s canister ranges: %v", ErrDelegation, d.SubnetID, err)
	}
	ranges := flat
	if ranges == nil {
		ranges = tree
	}
	if ranges == nil {
		return nil, fmt.Errorf("%w: subnet %s canister ranges: %v", ErrDelegation, d.SubnetID, errNoRanges(sid))
	}
	at, err := TreeTime(c.Tree)
	if err != nil {
		return nil, fmt.Errorf("%w: subnet %s: %v", ErrDelegation, d.SubnetID, err)
	}
	return &subnetAuthority{subnet: d.SubnetID, key: key, ranges: ranges, flat: flat, tree: tree, at: at}, nil
}

// SubnetRanges reads a subnet's canister ranges from either layout the IC
// has used: /subnet/<id>/canister_ranges (one leaf), or the sharded
// /canister_ranges/<id>/<shard> leaves of newer certificates.
func SubnetRanges(t *Tree, subnetID []byte) ([]CanisterRange, error) {
	flat, err := FlatSubnetRanges(t, subnetID)
	if err != nil || flat != nil {
		return flat, err
	}
	tree, err := TreeSubnetRanges(t, subnetID)
	if err != nil || tree != nil {
		return tree, err
	}
	return nil, errNoRanges(subnetID)
}

func errNoRanges(subnetID []byte) error {
	return fmt.Errorf("neither /subnet/%s/canister_ranges nor /canister_ranges/%s is present",
		hex.EncodeToString(subnetID), hex.EncodeToString(subnetID))
}

// FlatSubnetRanges reads the one /subnet/<id>/canister_ranges leaf; nil
// without an error when the tree does not hold it.
func FlatSubnetRanges(t *Tree, subnetID []byte) ([]CanisterRange, error) {
	leaf, st := t.Lookup([]byte("subnet"), subnetID, []byte("canister_ranges"))
	if st != Found {
		return nil, nil
	}
	r, err := DecodeRanges(leaf)
	if err == nil && r == nil {
		r = []CanisterRange{}
	}
	return r, err
}

// TreeSubnetRanges reads every shard leaf under /canister_ranges/<id> that
// the tree reveals (a replica prunes the shards that do not hold the
// canister asked about); nil without an error when the subtree is absent or
// reveals no shard.
func TreeSubnetRanges(t *Tree, subnetID []byte) ([]CanisterRange, error) {
	sub, st := t.Subtree([]byte("canister_ranges"), subnetID)
	if st != Found {
		return nil, nil
	}
	var all []CanisterRange
	for _, shard := range sub.Children() {
		switch shard.Tree.Kind() {
		case KindPruned:
			continue // a shard kept only to prove a neighbour: it says nothing
		case KindLeaf:
		default:
			return nil, fmt.Errorf("shard %x is a %s, not a leaf", shard.Label, shard.Tree.Kind())
		}
		r, err := DecodeRanges(shard.Tree.value)
		if err != nil {
			return nil, err
		}
		all = append(all, r...)
	}
	return all, nil
}
