package certificate

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"alpnib.dev/ic/internal/cborx"
	"alpnib.dev/ic/internal/leb128"
	"alpnib.dev/ic/principal"
)

// localSubnet is what a local replica holds: a root key, a subnet key and
// the delegation between them.
type localSubnet struct {
	root, subnet *SecretKey
	id           principal.Principal
	delegation   *Delegation
	now          time.Time
}

func newLocalSubnet(t *testing.T, ranges ...CanisterRange) *localSubnet {
	t.Helper()
	root, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	subnet, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	id := principal.SelfAuthenticating([]byte("subnet"))
	now := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	d, err := Delegate(root, id, subnet.PublicKey(), ranges, now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &localSubnet{root: root, subnet: subnet, id: id, delegation: d, now: now}
}

func (s *localSubnet) verifier(t *testing.T) *Verifier {
	t.Helper()
	v, err := NewVerifier(s.root.PublicKey().DER(), Options{Now: func() time.Time { return s.now }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (s *localSubnet) stateTree(t *testing.T) *Tree {
	b := NewBuilder()
	b.MustInsert(Path("time"), leb128.AppendUnsigned(nil, uint64(s.now.UnixNano())))
	b.MustInsert(Path("request_status", "r1", "status"), []byte("replied"))
	b.MustInsert(Path("request_status", "r1", "reply"), append([]byte("DIDL\x00\x01\x71"), bytes.Repeat([]byte("x"), 500)...))
	b.MustInsert(Path("request_status", "r3", "status"), []byte("processing"))
	return b.Build()
}

func TestAMintedDelegatedCertificateVerifiesForCanistersInItsRanges(t *testing.T) {
	s := newLocalSubnet(t, CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(99)})
	cert, err := Sign(s.subnet, s.stateTree(t), s.delegation)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := cert.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	v := s.verifier(t)
	got, err := v.Verify(raw, ForCanister(principal.CanisterID(7)))
	if err != nil {
		t.Fatal(err)
	}
	if val, st := got.Tree.LookupString("request_status", "r1", "status"); st != Found || string(val) != "replied" {
		t.Errorf("status = %q %s", val, st)
	}
	if _, err := v.Verify(raw, ForCanister(principal.CanisterID(100))); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("canister outside the range: err = %v", err)
	}
	if _, err := v.Verify(raw, ForSubnet(s.id)); err != nil {
		t.Errorf("subnet scope: %v", err)
	}
	if _, err := v.Verify(raw, ForSubnet(principal.SelfAuthenticating([]byte("other")))); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("other subnet scope: err = %v", err)
	}
}

func TestARootSignedCertificateNeedsNoDelegation(t *testing.T) {
	s := newLocalSubnet(t)
	cert, err := Sign(s.root, s.stateTree(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := cert.Marshal()
	if _, err := s.verifier(t).Verify(raw, ForCanister(principal.CanisterID(12345))); err != nil {
		t.Fatal(err)
	}
	other := newLocalSubnet(t)
	if _, err := other.verifier(t).Verify(raw, AnyScope()); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong root key: err = %v, want ErrSignature", err)
	}
}

func TestACertificateSignedByTheSubnetKeyWithoutItsDelegationFails(t *testing.T) {
	s := newLocalSubnet(t, CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(9)})
	cert, _ := Sign(s.subnet, s.stateTree(t), nil)
	raw, _ := cert.Marshal()
	if _, err := s.verifier(t).Verify(raw, ForCanister(principal.CanisterID(1))); !errors.Is(err, ErrSignature) {
		t.Errorf("err = %v, want ErrSignature", err)
	}
}

func TestADelegationFromAnotherRootFails(t *testing.T) {
	s := newLocalSubnet(t, CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(9)})
	rogue := newLocalSubnet(t, CanisterRange{From: principal.CanisterID(0), To: principal.CanisterID(9)})
	cert, _ := Sign(rogue.subnet, s.stateTree(t), rogue.delegation)
	raw, _ := cert.Marshal()
	if _, err := s.verifier(t).Verify(raw, ForCanister(principal.CanisterID(1))); !errors.Is(err, ErrDelegation) {
		t.Errorf("err = %v, want ErrDelegation", err)
	}
}

func TestShardedCanisterRangesAreReadToo(t *testing.T) {
	s := newLocalSubnet(t)
	b := NewBuilder()
	b.MustInsert(Path("time"), leb128.AppendUnsigned(nil, uint64(s.now.UnixNano())))
	b.MustInsert([][]byte{[]byte("subnet"), s.id.Bytes(), []byte("public_key")}, s.subnet.PublicKey().DER())
	for i, r := range []CanisterRange{
		{From: principal.CanisterID(0), To: principal.CanisterID(9)},
		{From: principal.CanisterID(20), To: principal.CanisterID(29)},
	} {
		enc, err := EncodeRanges([]CanisterRange{r})
		if err != nil {
			t.Fatal(err)
		}
		b.MustInsert([][]byte{[]byte("canister_ranges"), s.id.Bytes(), {byte(i)}}, enc)
	}
	root, _ := Sign(s.root, b.Build(), nil)
	rootRaw, _ := root.Marshal()
	cert, _ := Sign(s.subnet, s.stateTree(t), &Delegation{SubnetID: s.id, Certificate: rootRaw})
	raw, _ := cert.Marshal()
	v := s.verifier(t)
	for id, ok := range map[uint64]bool{0: true, 9: true, 10: false, 25: true, 30: false} {
		_, err := v.Verify(raw, ForCanister(principal.CanisterID(id)))
		if ok != (err == nil) {
			t.Errorf("canister %d: err = %v, want ok=%v", id, err, ok)
		}
	}
}

func TestBuilderRefusesInconsistentPaths(t *testing.T) {
	b := NewBuilder()
	b.MustInsert(Path("a", "b"), []byte("v"))
	if err := b.Insert(Path("a", "b", "c"), nil); err == nil {
		t.Error("inserted below a value")
	}
	if err := b.Insert(Path("a"), []byte("x")); err == nil {
		t.Error("replaced a subtree with a value")
	}
	if err := b.Insert(nil, []byte("x")); err == nil {
		t.Error("inserted at the empty path")
	}
	b.MustInsert(Path("a", "b"), []byte("w"))
	if v, st := b.Build().LookupString("a", "b"); st != Found || string(v) != "w" {
		t.Errorf("overwrite: %q %s", v, st)
	}
}

func TestAPrunedTreeKeepsItsDigestAndProvesWhatWasAsked(t *testing.T) {
	s := newLocalSubnet(t)
	full := s.stateTree(t)
	pruned := Prune(full, Path("request_status", "r2"), Path("time"))
	if pruned.Digest() != full.Digest() {
		t.Fatal("pruning changed the digest")
	}
	if _, st := pruned.LookupString("request_status", "r2", "status"); st != Absent {
		t.Errorf("r2 (never submitted) is %s, want Absent", st)
	}
	if _, st := pruned.LookupString("time"); st != Found {
		t.Errorf("time is %s", st)
	}
	if _, st := pruned.LookupString("request_status", "r1", "status"); st != Unknown {
		t.Errorf("r1 (not asked for) is %s, want Unknown", st)
	}
	a, _ := full.MarshalCBOR()
	b, _ := pruned.MarshalCBOR()
	if len(b) >= len(a) {
		t.Errorf("pruned tree is not smaller: %d >= %d bytes", len(b), len(a))
	}
}

func TestTheRangesLeafIsSelfDescribedCBOR(t *testing.T) {
	enc, err := EncodeRanges([]CanisterRange{{From: principal.CanisterID(1), To: principal.CanisterID(2)}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(enc, cborx.SelfDescribe) {
		t.Errorf("ranges leaf %x lacks the self-describe tag", enc)
	}
	back, err := DecodeRanges(enc)
	if err != nil || len(back) != 1 || back[0].To != principal.CanisterID(2) {
		t.Errorf("round trip: %v %v", back, err)
	}
}

func TestASecretKeyRoundTripsThroughBytes(t *testing.T) {
	sk, _ := GenerateKey(nil)
	back, err := SecretKeyFromBytes(sk.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !back.PublicKey().Equal(sk.PublicKey()) {
		t.Error("public key changed")
	}
	sig, _ := back.SignMessage([]byte("m"))
	if err := sk.PublicKey().VerifySignature([]byte("m"), sig); err != nil {
		t.Error(err)
	}
	if err := sk.PublicKey().VerifySignature([]byte("n"), sig); !errors.Is(err, ErrSignature) {
		t.Errorf("wrong message: %v", err)
	}
}

func TestMalformedPublicKeysAreRefused(t *testing.T) {
	good := MainnetRootKeyDER()
	for name, der := range map[string][]byte{
		"truncated":  good[:len(good)-1],
		"bad prefix": append([]byte{0x31}, good[1:]...),
		"not a point": func() []byte {
			b := append([]byte{}, good...)
			b[len(b)-1] ^= 0xff
			return b
		}(),
	} {
		if _, err := ParsePublicKeyDER(der); !errors.Is(err, ErrPublicKey) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}
