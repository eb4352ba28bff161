package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"alpnib.dev/ic/principal"
)

// vectors mirrors testdata/identity.json, a copy of
// shared/conformance/identity.json.
type vectors struct {
	Keys []struct {
		Name          string `json:"name"`
		PEM           string `json:"pem"`
		DER           string `json:"der_public_key_hex"`
		PrincipalText string `json:"principal_text"`
		Signature     struct {
			Message   string `json:"message_hex"`
			Signature string `json:"signature_hex"`
		} `json:"signature_over_spec_request_id"`
	} `json:"keys"`
	DERVectors []struct {
		Raw       string `json:"raw_public_key_hex"`
		DER       string `json:"der_hex"`
		Principal string `json:"principal_text"`
	} `json:"der_public_key_vectors"`
	InvalidDER []struct {
		DER string `json:"der_hex"`
		Why string `json:"why"`
	} `json:"invalid_der_public_keys"`
	Secp256k1 []struct {
		Name          string `json:"name"`
		PEM           string `json:"pem"`
		DER           string `json:"der_public_key_hex"`
		PrincipalText string `json:"principal_text"`
		VerifyOnly    *struct {
			Message   string `json:"message_hex"`
			Signature string `json:"signature_r_s_hex"`
		} `json:"verify_only_signature"`
	} `json:"secp256k1_keys"`
	MustReject []struct {
		Name string `json:"name"`
		PEM  string `json:"pem"`
		Why  string `json:"why"`
	} `json:"secp256k1_must_reject"`
}

func load(t *testing.T) vectors {
	t.Helper()
	raw, err := os.ReadFile("testdata/identity.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Keys) == 0 || len(v.Secp256k1) == 0 || len(v.MustReject) == 0 {
		t.Fatal("vectors missing")
	}
	return v
}

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEveryEd25519PEMGivesTheStatedKeyPrincipalAndSignature(t *testing.T) {
	for _, k := range load(t).Keys {
		t.Run(k.Name, func(t *testing.T) {
			id, err := FromPEM([]byte(k.PEM))
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(id.PublicKeyDER()); got != k.DER {
				t.Errorf("DER = %s, want %s", got, k.DER)
			}
			if id.Sender().String() != k.PrincipalText {
				t.Errorf("sender = %s, want %s", id.Sender(), k.PrincipalText)
			}
			sig, err := id.Sign(unhex(t, k.Signature.Message))
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(sig) != k.Signature.Signature {
				t.Errorf("signature = %x, want %s", sig, k.Signature.Signature)
			}
			if err := Verify(id.PublicKeyDER(), unhex(t, k.Signature.Message), sig); err != nil {
				t.Errorf("own signature does not verify: %v", err)
			}
		})
	}
}

func TestEverySecp256k1PEMGivesTheStatedKeyAndPrincipal(t *testing.T) {
	for _, k := range load(t).Secp256k1 {
		t.Run(k.Name, func(t *testing.T) {
			id, err := FromPEM([]byte(k.PEM))
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(id.PublicKeyDER()); got != k.DER {
				t.Errorf("DER = %s, want %s", got, k.DER)
			}
			if id.Sender().String() != k.PrincipalText {
				t.Errorf("sender = %s, want %s", id.Sender(), k.PrincipalText)
			}
			if k.VerifyOnly != nil {
				if err := Verify(id.PublicKeyDER(), unhex(t, k.VerifyOnly.Message), unhex(t, k.VerifyOnly.Signature)); err != nil {
					t.Errorf("reference signature does not verify: %v", err)
				}
			}
			msg := []byte("\x0Aic-request and some bytes")
			sig, err := id.Sign(msg)
			if err != nil {
				t.Fatal(err)
			}
			if len(sig) != 64 {
				t.Fatalf("signature is %d bytes", len(sig))
			}
			if err := Verify(id.PublicKeyDER(), msg, sig); err != nil {
				t.Errorf("own signature does not verify: %v", err)
			}
			sig[5] ^= 1
			if err := Verify(id.PublicKeyDER(), msg, sig); !errors.Is(err, ErrBadSignature) {
				t.Errorf("tampered signature: err = %v", err)
			}
		})
	}
}

func TestKeysOnTheWrongCurveAreRefused(t *testing.T) {
	for _, k := range load(t).MustReject {
		t.Run(k.Name, func(t *testing.T) {
			id, err := FromPEM([]byte(k.PEM))
			if err == nil {
				t.Fatalf("accepted %s as %s (%s)", k.Name, id.Sender(), k.Why)
			}
			if !errors.Is(err, ErrUnsupportedKey) {
				t.Errorf("err = %v, want ErrUnsupportedKey", err)
			}
		})
	}
}

func TestDERPublicKeyVectorsParseAndBadOnesAreRefused(t *testing.T) {
	v := load(t)
	for _, d := range v.DERVectors {
		der := Ed25519PublicKeyDER(unhex(t, d.Raw))
		if hex.EncodeToString(der) != d.DER {
			t.Errorf("DER of %s = %x", d.Raw, der)
		}
		k, err := ParsePublicKeyDER(der)
		if err != nil || k.Kind != KindEd25519 {
			t.Errorf("parse %s: %v", d.DER, err)
		}
		if p := principal.SelfAuthenticating(der); p.String() != d.Principal {
			t.Errorf("principal of %s = %s, want %s", d.Raw, p, d.Principal)
		}
	}
	for _, d := range v.InvalidDER {
		if _, err := ParsePublicKeyDER(unhex(t, d.DER)); err == nil {
			t.Errorf("accepted invalid DER %s (%s)", d.DER, d.Why)
		}
	}
}

func TestADfxStylePEMWhosePublicKeyDoesNotMatchIsRefused(t *testing.T) {
	// The RFC 8032 TEST 1 key in the v2 layout with the last public key byte changed.
	k := load(t).Keys[2]
	if !strings.Contains(k.Name, "dfx_style") {
		t.Fatalf("vector order changed: %s", k.Name)
	}
	if _, err := FromPEM([]byte(k.PEM)); err != nil {
		t.Fatal(err)
	}
	block := mustPEMBytes(t, k.PEM)
	block[len(block)-1] ^= 0xff
	if _, err := parsePKCS8(block); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("mismatching embedded public key: err = %v", err)
	}
}

func TestAGeneratedKeyRoundTripsThroughPEM(t *testing.T) {
	id, err := GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := id.PEM()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(pemBytes, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Errorf("PEM starts %q", pemBytes[:30])
	}
	back, err := FromPEM(pemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if back.Sender() != id.Sender() || !bytes.Equal(back.PublicKeyDER(), id.PublicKeyDER()) {
		t.Error("round trip changed the identity")
	}
	msg := []byte("hello")
	s1, _ := id.Sign(msg)
	s2, _ := back.Sign(msg)
	if !bytes.Equal(s1, s2) || !ed25519.Verify(id.key.Public().(ed25519.PublicKey), msg, s1) {
		t.Error("signatures differ after the round trip")
	}
}

func TestTheAnonymousIdentitySignsNothing(t *testing.T) {
	var id Identity = Anonymous{}
	if id.Sender() != principal.Anonymous || id.PublicKeyDER() != nil {
		t.Error("anonymous identity has a key")
	}
	if sig, err := id.Sign([]byte("x")); sig != nil || err != nil {
		t.Errorf("anonymous Sign = %x, %v", sig, err)
	}
}

func TestGarbageIsNotAnIdentity(t *testing.T) {
	for _, in := range []string{
		"",
		"not a pem",
		"-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n",
		"-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----\n",
		"-----BEGIN EC PRIVATE KEY-----\nMAA=\n-----END EC PRIVATE KEY-----\n",
	} {
		if _, err := FromPEM([]byte(in)); err == nil {
			t.Errorf("FromPEM(%q) accepted", in)
		}
	}
}

func TestAHighSSignatureIsRefused(t *testing.T) {
	id, err := FromPEM([]byte(load(t).Secp256k1[0].PEM))
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte("m")
	sig, _ := id.Sign(msg)
	// s' = n - s is the same signature with the high S.
	n, _ := hex.DecodeString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141")
	var borrow int
	hi := make([]byte, 32)
	for i := 31; i >= 0; i-- {
		d := int(n[i]) - int(sig[32+i]) - borrow
		borrow = 0
		if d < 0 {
			d += 256
			borrow = 1
		}
		hi[i] = byte(d)
	}
	high := append(append([]byte{}, sig[:32]...), hi...)
	if err := Verify(id.PublicKeyDER(), msg, high); !errors.Is(err, ErrBadSignature) {
		t.Errorf("high-S signature: err = %v", err)
	}
}
