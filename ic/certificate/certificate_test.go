package certificate

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"alpnib.dev/ic/principal"
)

// vectors mirrors testdata/certificate.json, a copy of
// shared/conformance/certificate.json.
type lookupVector struct {
	Path     []string `json:"path_hex"`
	Display  string   `json:"path_display"`
	Expected string   `json:"expected"`
	Value    string   `json:"value_hex"`
}

type vectors struct {
	RootKey struct {
		DER string `json:"der_hex"`
		Raw string `json:"raw_g2_hex"`
	} `json:"ic_mainnet_root_key"`
	HashTrees []struct {
		Name     string         `json:"name"`
		CBOR     string         `json:"cbor_hex"`
		RootHash string         `json:"expected_root_hash_hex"`
		Lookups  []lookupVector `json:"lookups"`
		Lookups2 []lookupVector `json:"lookups_self_computed_with_spec_algorithm"`
		Cases    []struct {
			Name     string   `json:"name"`
			CBOR     string   `json:"cbor_hex"`
			Path     []string `json:"path_hex"`
			Expected string   `json:"expected"`
			Value    string   `json:"value_hex"`
			RootHash string   `json:"root_hash_hex"`
		} `json:"cases"`
	} `json:"hash_trees"`
	Certificates []struct {
		Name          string `json:"name"`
		CBOR          string `json:"cbor_hex"`
		RootHash      string `json:"root_hash_hex"`
		SignedMessage string `json:"signed_message_hex"`
		TimeNS        string `json:"time_ns"`
		Delegation    struct {
			SubnetID  string         `json:"subnet_id_hex"`
			RootHash  string         `json:"certificate_root_hash_hex"`
			PublicKey string         `json:"subnet_public_key_der_hex"`
			Ranges    [][2]string    `json:"canister_ranges"`
			Lookups   []lookupVector `json:"lookups"`
		} `json:"delegation"`
		Checks []struct {
			Canister string `json:"canister_id"`
			Expected string `json:"expected"`
		} `json:"verify_checks"`
		Lookups []lookupVector `json:"lookups"`
		Valid   bool           `json:"expected_valid"`
	} `json:"certificates"`
}

func load(t testing.TB) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/certificate.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.HashTrees) == 0 || len(v.Certificates) != 2 {
		t.Fatal("vectors missing")
	}
	return v
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkLookups(t *testing.T, tree *Tree, lookups []lookupVector) {
	t.Helper()
	for _, l := range lookups {
		path := make([][]byte, len(l.Path))
		for i, p := range l.Path {
			path[i] = unhex(t, p)
		}
		v, st := tree.Lookup(path...)
		if st.String() != l.Expected {
			t.Errorf("lookup %s = %s, want %s", l.Display, st, l.Expected)
			continue
		}
		if st == Found && hex.EncodeToString(v) != l.Value {
			t.Errorf("lookup %s = %x, want %s", l.Display, v, l.Value)
		}
	}
}

func TestHashTreeVectorsReconstructAndLookUpAsTheSpecSays(t *testing.T) {
	for _, h := range load(t).HashTrees {
		t.Run(h.Name, func(t *testing.T) {
			if h.CBOR != "" {
				tree, err := DecodeTree(unhex(t, h.CBOR))
				if err != nil {
					t.Fatal(err)
				}
				if d := tree.Digest(); hex.EncodeToString(d[:]) != h.RootHash {
					t.Errorf("root hash = %x, want %s", d, h.RootHash)
				}
				enc, _ := tree.MarshalCBOR()
				if hex.EncodeToString(enc) != h.CBOR {
					t.Errorf("re-encoding differs:\n got %x\nwant %s", enc, h.CBOR)
				}
				checkLookups(t, tree, h.Lookups)
				checkLookups(t, tree, h.Lookups2)
			}
			for _, c := range h.Cases {
				tree, err := DecodeTree(unhex(t, c.CBOR))
				if err != nil {
					t.Fatalf("%s: %v", c.Name, err)
				}
				if d := tree.Digest(); hex.EncodeToString(d[:]) != c.RootHash {
					t.Errorf("%s: root hash = %x, want %s", c.Name, d, c.RootHash)
				}
				checkLookups(t, tree, []lookupVector{{Path: c.Path, Display: c.Name, Expected: c.Expected, Value: c.Value}})
			}
		})
	}
}

func TestPruningTheSpecExampleGivesTheSpecsPrunedTree(t *testing.T) {
	v := load(t)
	full, err := DecodeTree(unhex(t, v.HashTrees[0].CBOR))
	if err != nil {
		t.Fatal(err)
	}
	pruned := Prune(full, Path("a", "y"), Path("ax"), Path("d"))
	got, _ := pruned.MarshalCBOR()
	if hex.EncodeToString(got) != v.HashTrees[1].CBOR {
		t.Errorf("pruned tree:\n got %x\nwant %s\n%s", got, v.HashTrees[1].CBOR, pruned)
	}
}

func mainnetVerifier(t testing.TB, at time.Time) *Verifier {
	t.Helper()
	v, err := NewVerifier(MainnetRootKeyDER(), Options{Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func certTime(t testing.TB, ns string) time.Time {
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, n)
}

func TestTheBuiltInRootKeyIsTheVectorsMainnetKey(t *testing.T) {
	v := load(t)
	if hex.EncodeToString(MainnetRootKeyDER()) != v.RootKey.DER {
		t.Fatal("built-in mainnet root key differs from the vector")
	}
	pk, err := ParsePublicKeyDER(MainnetRootKeyDER())
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(pk.Raw()) != v.RootKey.Raw {
		t.Error("raw G2 point differs")
	}
}

func TestTheRealMainnetCertificateVerifiesAtItsOwnTime(t *testing.T) {
	c := load(t).Certificates[0]
	if !c.Valid {
		t.Fatal("vector order changed")
	}
	v := mainnetVerifier(t, certTime(t, c.TimeNS).Add(time.Minute))
	for _, check := range c.Checks {
		cert, err := v.Verify(unhex(t, c.CBOR), ForCanister(principal.MustDecode(check.Canister)))
		switch {
		case check.Expected == "ok" && err != nil:
			t.Errorf("%s: %v", check.Canister, err)
		case strings.HasPrefix(check.Expected, "fail: not authorized") && !errors.Is(err, ErrNotAuthorized):
			t.Errorf("%s: err = %v, want ErrNotAuthorized", check.Canister, err)
		case err == nil:
			if d := cert.Tree.Digest(); hex.EncodeToString(d[:]) != c.RootHash {
				t.Errorf("root hash %x", d)
			}
			if hex.EncodeToString(cert.SignedMessage()) != c.SignedMessage {
				t.Errorf("signed message %x", cert.SignedMessage())
			}
			checkLookups(t, cert.Tree, c.Lookups)
		}
	}
}

func TestTheDelegationInsideTheMainnetCertificateSaysWhatTheVectorSays(t *testing.T) {
	c := load(t).Certificates[0]
	cert, err := Decode(unhex(t, c.CBOR))
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(cert.Delegation.SubnetID.Bytes()) != c.Delegation.SubnetID {
		t.Errorf("subnet %s", cert.Delegation.SubnetID)
	}
	inner, err := Decode(cert.Delegation.Certificate)
	if err != nil {
		t.Fatal(err)
	}
	if d := inner.Tree.Digest(); hex.EncodeToString(d[:]) != c.Delegation.RootHash {
		t.Errorf("delegation root hash %x", d)
	}
	checkLookups(t, inner.Tree, c.Delegation.Lookups)
	auth, err := mainnetVerifier(t, time.Now()).verifyDelegation(cert.Delegation)
	if err != nil {
		t.Fatal(err)
	}
	if hex.EncodeToString(auth.key.DER()) != c.Delegation.PublicKey {
		t.Errorf("subnet key %x", auth.key.DER())
	}
	if len(auth.ranges) != len(c.Delegation.Ranges) {
		t.Fatalf("ranges %v", auth.ranges)
	}
	for i, r := range c.Delegation.Ranges {
		if hex.EncodeToString(auth.ranges[i].From.Bytes()) != r[0] || hex.EncodeToString(auth.ranges[i].To.Bytes()) != r[1] {
			t.Errorf("range %d = %v", i, auth.ranges[i])
		}
	}
}

func TestACertificateWithOneFlippedSignatureByteFails(t *testing.T) {
	c := load(t).Certificates[1]
	if c.Valid {
		t.Fatal("vector order changed")
	}
	v := mainnetVerifier(t, certTime(t, c.TimeNS))
	_, err := v.Verify(unhex(t, c.CBOR), ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai")))
	if !errors.Is(err, ErrSignature) {
		t.Fatalf("err = %v, want ErrSignature", err)
	}
	// Everything but the signature still decodes.
	cert, err := Decode(unhex(t, c.CBOR))
	if err != nil {
		t.Fatal(err)
	}
	checkLookups(t, cert.Tree, c.Lookups)
}

func TestEveryFlippedByteOfTheMainnetCertificateIsRejected(t *testing.T) {
	c := load(t).Certificates[0]
	good := unhex(t, c.CBOR)
	at := certTime(t, c.TimeNS)
	canister := ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai"))
	// Every 7th byte keeps the test quick while touching tree, signature and
	// delegation; each needs its own verifier so no cached delegation helps.
	for i := 3; i < len(good); i += 7 {
		bad := append([]byte{}, good...)
		bad[i] ^= 0x01
		if _, err := mainnetVerifier(t, at).Verify(bad, canister); err == nil {
			t.Errorf("byte %d flipped: certificate still verifies", i)
		}
	}
}

func TestAWrongRootKeyFails(t *testing.T) {
	c := load(t).Certificates[0]
	sk, err := GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVerifier(sk.PublicKey().DER(), Options{SkipFreshness: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(unhex(t, c.CBOR), ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai")))
	if !errors.Is(err, ErrDelegation) {
		t.Fatalf("err = %v, want ErrDelegation", err)
	}
}

func TestAStaleCertificateFailsUnlessFreshnessIsOff(t *testing.T) {
	c := load(t).Certificates[0]
	canister := ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai"))
	at := certTime(t, c.TimeNS)
	for _, now := range []time.Time{time.Now(), at.Add(6 * time.Minute), at.Add(-6 * time.Minute)} {
		if _, err := mainnetVerifier(t, now).Verify(unhex(t, c.CBOR), canister); !errors.Is(err, ErrStale) {
			t.Errorf("now %s: err = %v, want ErrStale", now, err)
		}
	}
	v, _ := NewVerifier(MainnetRootKeyDER(), Options{SkipFreshness: true})
	if _, err := v.Verify(unhex(t, c.CBOR), canister); err != nil {
		t.Errorf("freshness off: %v", err)
	}
}

func TestADelegationIsVerifiedOnceAndCached(t *testing.T) {
	c := load(t).Certificates[0]
	v := mainnetVerifier(t, certTime(t, c.TimeNS))
	canister := ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai"))
	for range 3 {
		if _, err := v.Verify(unhex(t, c.CBOR), canister); err != nil {
			t.Fatal(err)
		}
	}
	if len(v.cache) != 1 {
		t.Errorf("cache holds %d delegations, want 1", len(v.cache))
	}
	// The cached authority still enforces the scope.
	if _, err := v.Verify(unhex(t, c.CBOR), ForCanister(principal.CanisterID(2))); !errors.Is(err, ErrNotAuthorized) {
		t.Errorf("out-of-range canister with a cached delegation: %v", err)
	}
}

func BenchmarkVerifyMainnetCertificateCachedDelegation(b *testing.B) {
	c := load(b).Certificates[0]
	data := unhex(b, c.CBOR)
	v := mainnetVerifier(b, certTime(b, c.TimeNS))
	canister := ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai"))
	if _, err := v.Verify(data, canister); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(data, canister); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyMainnetCertificateColdDelegation(b *testing.B) {
	c := load(b).Certificates[0]
	data := unhex(b, c.CBOR)
	at := certTime(b, c.TimeNS)
	canister := ForCanister(principal.MustDecode("ivg37-qiaaa-aaaab-aaaga-cai"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mainnetVerifier(b, at).Verify(data, canister); err != nil {
			b.Fatal(err)
		}
	}
}
