package certificate

import (
	"errors"
	"testing"
	"time"

	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// delegatedIn mints a certificate of s's state signed by its subnet key
// under a delegation whose ranges are in layout.
func delegatedIn(t *testing.T, s *localSubnet, layout RangesLayout, ranges ...CanisterRange) []byte {
	t.Helper()
	d, err := DelegateIn(layout, s.root, s.id, s.subnet.PublicKey(), ranges, s.now)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := Sign(s.subnet, s.stateTree(t), d)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cert.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestAV4DelegationIsCheckedAtItsShardedRanges(t *testing.T) {
	s := newLocalSubnet(t)
	raw := delegatedIn(t, s, TreeRanges, CanisterRange{From: principal.CanisterID(10), To: principal.CanisterID(19)})
	v := s.verifier(t)
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(15), TreeRanges)); err != nil {
		t.Errorf("canister inside the sharded ranges: %v", err)
	}
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(20), TreeRanges)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("canister outside the sharded ranges: err = %v, want ErrNotAuthorized", err)
	}
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(15), FlatRanges)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("a v3 answer needs /subnet/<id>/canister_ranges, which this delegation lacks: err = %v", err)
	}
}

func TestAV3DelegationIsCheckedAtItsFlatRangesOnly(t *testing.T) {
	s := newLocalSubnet(t)
	raw := delegatedIn(t, s, FlatRanges, CanisterRange{From: principal.CanisterID(10), To: principal.CanisterID(19)})
	v := s.verifier(t)
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(15), FlatRanges)); err != nil {
		t.Errorf("canister inside the flat ranges: %v", err)
	}
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(15), TreeRanges)); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("a v4 answer needs /canister_ranges/<id>, which this delegation lacks: err = %v", err)
	}
}

func TestEachLayoutOfADelegationCarryingBothIsReadOnItsOwn(t *testing.T) {
	s := newLocalSubnet(t)
	flat := CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(9)}
	tree := CanisterRange{From: principal.CanisterID(20), To: principal.CanisterID(29)}
	b := NewBuilder()
	b.MustInsert(Path("time"), leb128.AppendUnsigned(nil, uint64(s.now.Add(-time.Hour).UnixNano())))
	b.MustInsert([][]byte{[]byte("subnet"), s.id.Bytes(), []byte("public_key")}, s.subnet.PublicKey().DER())
	fe, _ := EncodeRanges([]CanisterRange{flat})
	te, _ := EncodeRanges([]CanisterRange{tree})
	b.MustInsert([][]byte{[]byte("subnet"), s.id.Bytes(), []byte("canister_ranges")}, fe)
	b.MustInsert([][]byte{[]byte("canister_ranges"), s.id.Bytes(), tree.From.Bytes()}, te)
	rootCert, _ := Sign(s.root, b.Build(), nil)
	rootRaw, _ := rootCert.Marshal()
	cert, _ := Sign(s.subnet, s.stateTree(t), &Delegation{SubnetID: s.id, Certificate: rootRaw})
	raw, _ := cert.Marshal()
	v := s.verifier(t)
	for _, c := range []struct {
		id     uint64
		layout RangesLayout
		ok     bool
	}{{5, FlatRanges, true}, {25, FlatRanges, false}, {25, TreeRanges, true}, {5, TreeRanges, false}} {
		_, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(c.id), c.layout))
		if c.ok != (err == nil) {
			t.Errorf("canister %d at %s: err = %v, want ok=%v", c.id, c.layout, err, c.ok)
		}
	}
}

func TestAShardPrunedAwaySaysNothingAndIsNotAnError(t *testing.T) {
	s := newLocalSubnet(t)
	b := NewBuilder()
	b.MustInsert(Path("time"), []byte{0})
	for _, r := range []CanisterRange{
		{From: principal.CanisterID(0), To: principal.CanisterID(9)},
		{From: principal.CanisterID(20), To: principal.CanisterID(29)},
	} {
		enc, _ := EncodeRanges([]CanisterRange{r})
		b.MustInsert([][]byte{[]byte("canister_ranges"), s.id.Bytes(), r.From.Bytes()}, enc)
	}
	// keep the shard of canister 25 and only the label of its neighbour
	tree := Prune(b.Build(), [][]byte{[]byte("canister_ranges"), s.id.Bytes(), principal.CanisterID(20).Bytes()},
		[][]byte{[]byte("canister_ranges"), s.id.Bytes(), principal.CanisterID(10).Bytes()})
	got, err := TreeSubnetRanges(tree, s.id.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[0].Contains(principal.CanisterID(25)) {
		t.Errorf("ranges = %v, want only the revealed shard", got)
	}
}

func TestTheRealMainnetCertificateVerifiesInTheLayoutItsDelegationCarries(t *testing.T) {
	c := load(t).Certificates[0]
	cert, err := Decode(unhex(t, c.CBOR))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := Decode(cert.Delegation.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	sid := cert.Delegation.SubnetID.Bytes()
	flat, err := FlatSubnetRanges(inner.Tree, sid)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := TreeSubnetRanges(inner.Tree, sid)
	if err != nil {
		t.Fatal(err)
	}
	v := mainnetVerifier(t, certTime(t, c.TimeNS).Add(time.Minute))
	for _, check := range c.Checks {
		if check.Expected != "ok" {
			continue
		}
		id := principal.MustDecode(check.Canister)
		for _, l := range []struct {
			layout  RangesLayout
			carried bool
		}{{FlatRanges, flat != nil}, {TreeRanges, tree != nil}} {
			_, err := v.Verify(unhex(t, c.CBOR), ForCanisterIn(id, l.layout))
			if l.carried != (err == nil) {
				t.Errorf("%s at %s (carried: %v): err = %v", check.Canister, l.layout, l.carried, err)
			}
		}
	}
	if flat == nil && tree == nil {
		t.Fatal("the mainnet delegation carries no canister ranges")
	}
	t.Logf("mainnet delegation: flat ranges %v, sharded ranges %v", flat != nil, tree != nil)
}
