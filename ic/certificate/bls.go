package certificate

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"

	bls "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
)

// The IC signs state with BLS12-381 in the "minimal signature size" variant:
// signatures are G1 points (48 bytes compressed), public keys G2 points (96
// bytes), and messages are hashed to G1 with the standard ciphersuite below.
const (
	SignatureLength = bls.SizeOfG1AffineCompressed
	PublicKeyLength = bls.SizeOfG2AffineCompressed
)

var dst = []byte("BLS_SIG_BLS12381G1_XMD:SHA-256_SSWU_RO_NUL_")

// derPrefix is the SubjectPublicKeyInfo header of an IC BLS public key:
// algorithm OID 1.3.6.1.4.1.44668.5.3.1.2.1, curve OID 1.3.6.1.4.1.44668.5.3.2.1,
// then a 96-byte BIT STRING.
var derPrefix = []byte{
	0x30, 0x81, 0x82, 0x30, 0x1d, 0x06, 0x0d, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xdc, 0x7c, 0x05,
	0x03, 0x01, 0x02, 0x01, 0x06, 0x0c, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0xdc, 0x7c, 0x05, 0x03,
	0x02, 0x01, 0x03, 0x61, 0x00,
}

// ErrPublicKey is returned for a public key that is not a valid DER-wrapped
// BLS12-381 G2 point.
var ErrPublicKey = errors.New("invalid BLS public key")

// PublicKey is a BLS12-381 public key that has been decoded and checked to be
// in the prime-order subgroup, so verifying with it again costs only the
// signature check.
type PublicKey struct {
	point bls.G2Affine
	raw   [PublicKeyLength]byte
}

// ParsePublicKeyDER checks the DER header of an IC BLS key and decodes the
// point.
func ParsePublicKeyDER(der []byte) (*PublicKey, error) {
	if len(der) != len(derPrefix)+PublicKeyLength || !bytes.HasPrefix(der, derPrefix) {
		return nil, fmt.Errorf("%w: not a DER BLS12-381 key with the IC's OIDs (%d bytes)", ErrPublicKey, len(der))
	}
	return ParsePublicKey(der[len(derPrefix):])
}

// ParsePublicKey decodes a raw 96-byte compressed G2 point.
func ParsePublicKey(raw []byte) (*PublicKey, error) {
	if len(raw) != PublicKeyLength {
		return nil, fmt.Errorf("%w: %d bytes, want %d", ErrPublicKey, len(raw), PublicKeyLength)
	}
	pk := new(PublicKey)
	if _, err := pk.point.SetBytes(raw); err != nil { // includes the subgroup check
		return nil, fmt.Errorf("%w: %v", ErrPublicKey, err)
	}
	if pk.point.IsInfinity() {
		return nil, fmt.Errorf("%w: point at infinity", ErrPublicKey)
	}
	copy(pk.raw[:], raw)
	return pk, nil
}

// DER returns the key wrapped in its SubjectPublicKeyInfo, as /api/v2/status
// serves it and /subnet/<id>/public_key holds it.
func (pk *PublicKey) DER() []byte { return append(bytes.Clone(derPrefix), pk.raw[:]...) }

// Raw returns the 96-byte compressed point.
func (pk *PublicKey) Raw() []byte { return bytes.Clone(pk.raw[:]) }

// Equal reports whether two keys are the same point.
func (pk *PublicKey) Equal(other *PublicKey) bool { return other != nil && pk.raw == other.raw }

var negG2 = func() bls.G2Affine {
	_, _, _, g2 := bls.Generators()
	var n bls.G2Affine
	n.Neg(&g2)
	return n
}()

// ErrSignature is returned when a BLS signature does not verify.
var ErrSignature = errors.New("BLS signature does not verify")

// VerifySignature checks a 48-byte BLS signature over msg: one hash to G1 and
// one two-pairing product, e(sig, -g2) * e(H(msg), pk) == 1.
func (pk *PublicKey) VerifySignature(msg, sig []byte) error {
	if len(sig) != SignatureLength {
		return fmt.Errorf("%w: %d bytes, want %d", ErrSignature, len(sig), SignatureLength)
	}
	var s bls.G1Affine
	if _, err := s.SetBytes(sig); err != nil { // includes the subgroup check
		return fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if s.IsInfinity() {
		return fmt.Errorf("%w: point at infinity", ErrSignature)
	}
	h, err := bls.HashToG1(msg, dst)
	if err != nil {
		return fmt.Errorf("hash to G1: %w", err)
	}
	ok, err := bls.PairingCheck([]bls.G1Affine{s, h}, []bls.G2Affine{negG2, pk.point})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSignature, err)
	}
	if !ok {
		return ErrSignature
	}
	return nil
}

// SecretKey is a BLS12-381 secret key. The IC's keys are threshold keys held
// by no one; this type exists for local replicas and tests that must mint
// certificates the same way.
type SecretKey struct {
	s  big.Int
	pk *PublicKey
}

// GenerateKey makes a secret key from rand (crypto/rand.Reader when nil).
func GenerateKey(r io.Reader) (*SecretKey, error) {
	if r == nil {
		r = rand.Reader
	}
	var buf [48]byte // 384 bits reduced mod r: negligible bias
	for {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return nil, fmt.Errorf("generate BLS key: %w", err)
		}
		var e fr.Element
		e.SetBytes(buf[:])
		if !e.IsZero() {
			return secretFromElement(&e), nil
		}
	}
}

// SecretKeyFromBytes restores a key from the 32 bytes Bytes returned.
func SecretKeyFromBytes(b []byte) (*SecretKey, error) {
	if len(b) != fr.Bytes {
		return nil, fmt.Errorf("BLS secret key is %d bytes, want %d", len(b), fr.Bytes)
	}
	var e fr.Element
	if err := e.SetBytesCanonical(b); err != nil || e.IsZero() {
		return nil, errors.New("BLS secret key out of range")
	}
	return secretFromElement(&e), nil
}

func secretFromElement(e *fr.Element) *SecretKey {
	sk := new(SecretKey)
	e.BigInt(&sk.s)
	_, _, _, g2 := bls.Generators()
	pk := new(PublicKey)
	pk.point.ScalarMultiplication(&g2, &sk.s)
	pk.raw = pk.point.Bytes()
	sk.pk = pk
	return sk
}

// Bytes returns the 32-byte big-endian scalar, for storing the key.
func (sk *SecretKey) Bytes() []byte {
	var e fr.Element
	e.SetBigInt(&sk.s)
	b := e.Bytes()
	return b[:]
}

// PublicKey returns the matching public key.
func (sk *SecretKey) PublicKey() *PublicKey { return sk.pk }

// SignMessage returns the 48-byte BLS signature of msg.
func (sk *SecretKey) SignMessage(msg []byte) ([]byte, error) {
	h, err := bls.HashToG1(msg, dst)
	if err != nil {
		return nil, fmt.Errorf("hash to G1: %w", err)
	}
	var s bls.G1Affine
	s.ScalarMultiplication(&h, &sk.s)
	b := s.Bytes()
	return b[:], nil
}
