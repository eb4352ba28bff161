package identity

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"alpnib.dev/ic/principal"
)

// secp256k1DERPrefix is the DER SubjectPublicKeyInfo header (id-ecPublicKey,
// secp256k1, BIT STRING of 66 bytes) in front of a 65-byte uncompressed point.
var secp256k1DERPrefix = []byte{
	0x30, 0x56, 0x30, 0x10, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01,
	0x06, 0x05, 0x2b, 0x81, 0x04, 0x00, 0x0a, 0x03, 0x42, 0x00,
}

// Secp256k1 is an identity backed by a secp256k1 key, what dfx creates by
// default. Signatures are ECDSA over SHA-256 of the message, encoded as the
// 64 bytes r || s with s in the lower half of the group order.
type Secp256k1 struct {
	key    *secp256k1.PrivateKey
	der    []byte
	sender principal.Principal
}

// NewSecp256k1 wraps a secp256k1 private key.
func NewSecp256k1(key *secp256k1.PrivateKey) *Secp256k1 {
	der := append(append([]byte{}, secp256k1DERPrefix...), key.PubKey().SerializeUncompressed()...)
	return &Secp256k1{key: key, der: der, sender: principal.SelfAuthenticating(der)}
}

// Sender is the self-authenticating principal of the public key.
func (id *Secp256k1) Sender() principal.Principal { return id.sender }

// PublicKeyDER returns the DER SubjectPublicKeyInfo with the uncompressed
// point.
func (id *Secp256k1) PublicKeyDER() []byte { return bytes.Clone(id.der) }

// Sign returns r || s of a deterministic (RFC 6979) low-S ECDSA signature over
// SHA-256(msg).
func (id *Secp256k1) Sign(msg []byte) ([]byte, error) {
	h := sha256.Sum256(msg)
	sig := ecdsa.Sign(id.key, h[:])
	r, s := sig.R(), sig.S()
	out := make([]byte, 64)
	r.PutBytesUnchecked(out[:32])
	s.PutBytesUnchecked(out[32:])
	return out, nil
}

// parseSEC1 reads an RFC 5915 ECPrivateKey. The curve comes from its
// parameters field or, failing that, from a preceding "EC PARAMETERS" PEM
// block; a key that names no curve at all is refused rather than guessed.
//
//	ECPrivateKey ::= SEQUENCE { version INTEGER (1), privateKey OCTET STRING,
//	  parameters [0] EXPLICIT OID OPTIONAL, publicKey [1] EXPLICIT BIT STRING OPTIONAL }
func parseSEC1(der, paramsBlock []byte) (Identity, error) {
	var (
		seq, priv, params, curve, pubField, bits cryptobyte.String
		version                                  int64
		hasParams, hasPub                        bool
	)
	in := cryptobyte.String(der)
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, fmt.Errorf("read EC private key: not a DER SEQUENCE")
	}
	if !seq.ReadASN1Integer(&version) || version != 1 {
		return nil, fmt.Errorf("read EC private key: version must be 1")
	}
	if !seq.ReadASN1(&priv, cbasn1.OCTET_STRING) {
		return nil, fmt.Errorf("read EC private key: missing private key")
	}
	if !seq.ReadOptionalASN1(&params, &hasParams, cbasn1.Tag(0).Constructed().ContextSpecific()) ||
		!seq.ReadOptionalASN1(&pubField, &hasPub, cbasn1.Tag(1).Constructed().ContextSpecific()) ||
		!seq.Empty() {
		return nil, fmt.Errorf("read EC private key: malformed optional fields")
	}
	switch {
	case hasParams:
		if !params.ReadASN1(&curve, cbasn1.OBJECT_IDENTIFIER) || !params.Empty() {
			return nil, fmt.Errorf("read EC private key: parameters are not a named curve")
		}
	case paramsBlock != nil:
		p := cryptobyte.String(paramsBlock)
		if !p.ReadASN1(&curve, cbasn1.OBJECT_IDENTIFIER) || !p.Empty() {
			return nil, fmt.Errorf("read EC PARAMETERS: not a named curve")
		}
	default:
		return nil, fmt.Errorf("read EC private key: no curve named in the key or an EC PARAMETERS block")
	}
	if !bytes.Equal(curve, oidSecp256k1) {
		return nil, fmt.Errorf("read EC private key: %w: curve %s, want secp256k1", ErrUnsupportedKey, curveName(curve))
	}
	if len(priv) != 32 {
		return nil, fmt.Errorf("read EC private key: secp256k1 scalar is %d bytes, want 32", len(priv))
	}
	var k secp256k1.ModNScalar
	if overflow := k.SetByteSlice(priv); overflow || k.IsZero() {
		return nil, fmt.Errorf("read EC private key: scalar out of range")
	}
	id := NewSecp256k1(secp256k1.NewPrivateKey(&k))
	if hasPub {
		if !pubField.ReadASN1(&bits, cbasn1.BIT_STRING) || !pubField.Empty() {
			return nil, fmt.Errorf("read EC private key: bad public key field")
		}
		pub := bitStringBytes(bits)
		stated, err := secp256k1.ParsePubKey(pub)
		if err != nil {
			return nil, fmt.Errorf("read EC private key: embedded public key: %w", err)
		}
		if !stated.IsEqual(id.key.PubKey()) {
			return nil, fmt.Errorf("read EC private key: embedded public key does not match the private key")
		}
	}
	return id, nil
}
