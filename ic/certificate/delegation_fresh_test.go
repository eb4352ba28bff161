package certificate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/principal"
)

// A delegation's certificate may be older than the answer it vouches for,
// up to DelegationMaxAge, but not older, and not from the future; its age
// is judged at every use, not once when it is first verified and cached.
func TestADelegationsCertificateIsCheckedForFreshnessAtEveryUse(t *testing.T) {
	ranges := []CanisterRange{{From: principal.CanisterID(0), To: principal.CanisterID(9)}}
	for _, tc := range []struct {
		name string
		age  time.Duration
		ok   bool
	}{
		{"an hour old", time.Hour, true},
		{"29 days old", 29 * 24 * time.Hour, true},
		{"31 days old", 31 * 24 * time.Hour, false},
		{"ten minutes ahead", -10 * time.Minute, false},
	} {
		s := newLocalSubnet(t)
		d, err := Delegate(s.root, s.id, s.subnet.PublicKey(), ranges, s.now.Add(-tc.age))
		if err != nil {
			t.Fatal(err)
		}
		cert, _ := Sign(s.subnet, s.stateTree(t), d)
		raw, _ := cert.Marshal()
		_, err = s.verifier(t).Verify(raw, ForCanisterIn(principal.CanisterID(5), FlatRanges))
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && (!errors.Is(err, ErrStale) || !strings.Contains(err.Error(), "the delegation of subnet")):
			t.Errorf("%s: err = %v, want a stale delegation", tc.name, err)
		}
	}
	// The same verifier, a month later: the cached delegation is stale now.
	s := newLocalSubnet(t)
	v := s.verifier(t)
	s.delegation, _ = Delegate(s.root, s.id, s.subnet.PublicKey(), ranges, s.now.Add(-time.Hour))
	cert, _ := Sign(s.subnet, s.stateTree(t), s.delegation)
	raw, _ := cert.Marshal()
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(5), FlatRanges)); err != nil {
		t.Fatal(err)
	}
	s.now = s.now.Add(31 * 24 * time.Hour)
	cert, _ = Sign(s.subnet, s.stateTree(t), s.delegation)
	raw, _ = cert.Marshal()
	if _, err := v.Verify(raw, ForCanisterIn(principal.CanisterID(5), FlatRanges)); !errors.Is(err, ErrStale) {
		t.Fatalf("a cached delegation a month later: err = %v", err)
	}
	skip, _ := NewVerifier(s.root.PublicKey().DER(), Options{SkipFreshness: true})
	if _, err := skip.Verify(raw, ForCanisterIn(principal.CanisterID(5), FlatRanges)); err != nil {
		t.Fatalf("SkipFreshness: %v", err)
	}
}
