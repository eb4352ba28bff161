package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"
)

// ErrBadSignature is returned by Verify when the signature does not match.
var ErrBadSignature = errors.New("signature does not verify")

// KeyKind names the signature scheme of a public key.
type KeyKind string

// The key kinds Verify understands.
const (
	KindEd25519   KeyKind = "ed25519"
	KindSecp256k1 KeyKind = "secp256k1"
)

// PublicKey is a parsed DER SubjectPublicKeyInfo of a supported kind.
type PublicKey struct {
	Kind    KeyKind
	ed      ed25519.PublicKey
	secp    *secp256k1.PublicKey
	derForm []byte
}

// ParsePublicKeyDER reads an Ed25519 (RFC 8410) or secp256k1 (RFC 5480)
// SubjectPublicKeyInfo. Anything else, or trailing bytes, is an error.
func ParsePublicKeyDER(der []byte) (*PublicKey, error) {
	var spki, algo, oid, bits cryptobyte.String
	in := cryptobyte.String(der)
	if !in.ReadASN1(&spki, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, fmt.Errorf("read DER public key: not a single DER SEQUENCE")
	}
	if !spki.ReadASN1(&algo, cbasn1.SEQUENCE) || !algo.ReadASN1(&oid, cbasn1.OBJECT_IDENTIFIER) ||
		!spki.ReadASN1(&bits, cbasn1.BIT_STRING) || !spki.Empty() {
		return nil, fmt.Errorf("read DER public key: malformed SubjectPublicKeyInfo")
	}
	raw := bitStringBytes(bits)
	if raw == nil {
		return nil, fmt.Errorf("read DER public key: key is not a whole-byte BIT STRING")
	}
	switch {
	case bytes.Equal(oid, oidEd25519):
		if !algo.Empty() {
			return nil, fmt.Errorf("read DER ed25519 key: algorithm has parameters")
		}
		if len(raw) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("read DER ed25519 key: %d bytes, want 32", len(raw))
		}
		return &PublicKey{Kind: KindEd25519, ed: ed25519.PublicKey(bytes.Clone(raw)), derForm: bytes.Clone(der)}, nil
	case bytes.Equal(oid, oidECPublicKey):
		var curve cryptobyte.String
		if !algo.ReadASN1(&curve, cbasn1.OBJECT_IDENTIFIER) || !algo.Empty() {
			return nil, fmt.Errorf("read DER EC key: missing named curve")
		}
		if !bytes.Equal(curve, oidSecp256k1) {
			return nil, fmt.Errorf("read DER EC key: %w: curve %s", ErrUnsupportedKey, curveName(curve))
		}
		pk, err := secp256k1.ParsePubKey(raw)
		if err != nil {
			return nil, fmt.Errorf("read DER secp256k1 key: %w", err)
		}
		return &PublicKey{Kind: KindSecp256k1, secp: pk, derForm: bytes.Clone(der)}, nil
	default:
		return nil, fmt.Errorf("read DER public key: %w: algorithm OID %x", ErrUnsupportedKey, []byte(oid))
	}
}

// DER returns the encoding the key was parsed from.
func (k *PublicKey) DER() []byte { return bytes.Clone(k.derForm) }

// Verify checks sig over msg: Ed25519 directly; secp256k1 as ECDSA over
// SHA-256(msg) with a 64-byte r || s whose s must be in the lower half, the
// same rule the IC applies.
func (k *PublicKey) Verify(msg, sig []byte) error {
	switch k.Kind {
	case KindEd25519:
		if len(sig) != ed25519.SignatureSize || !ed25519.Verify(k.ed, msg, sig) {
			return ErrBadSignature
		}
		return nil
	case KindSecp256k1:
		if len(sig) != 64 {
			return fmt.Errorf("%w: secp256k1 signature is %d bytes, want 64", ErrBadSignature, len(sig))
		}
		var r, s secp256k1.ModNScalar
		if r.SetByteSlice(sig[:32]) || s.SetByteSlice(sig[32:]) || r.IsZero() || s.IsZero() {
			return fmt.Errorf("%w: r or s out of range", ErrBadSignature)
		}
		if s.IsOverHalfOrder() {
			return fmt.Errorf("%w: s is not normalised to the lower half", ErrBadSignature)
		}
		h := sha256.Sum256(msg)
		if !ecdsa.NewSignature(&r, &s).Verify(h[:], k.secp) {
			return ErrBadSignature
		}
		return nil
	}
	return fmt.Errorf("verify: %w: %s", ErrUnsupportedKey, k.Kind)
}

// Verify parses derPublicKey and checks sig over msg with it; what a replica
// does with an envelope's sender_pubkey and sender_sig.
func Verify(derPublicKey, msg, sig []byte) error {
	k, err := ParsePublicKeyDER(derPublicKey)
	if err != nil {
		return err
	}
	return k.Verify(msg, sig)
}
