package identity

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"alpnib.dev/ic/principal"
)

// ed25519DERPrefix is the fixed DER SubjectPublicKeyInfo header (RFC 8410) in
// front of a raw 32-byte Ed25519 public key.
var ed25519DERPrefix = []byte{0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00}

// Ed25519 is an identity backed by an Ed25519 key, the IC's default.
type Ed25519 struct {
	key    ed25519.PrivateKey
	der    []byte
	sender principal.Principal
}

// NewEd25519 wraps an Ed25519 private key.
func NewEd25519(key ed25519.PrivateKey) *Ed25519 {
	pub := key.Public().(ed25519.PublicKey)
	der := Ed25519PublicKeyDER(pub)
	return &Ed25519{key: key, der: der, sender: principal.SelfAuthenticating(der)}
}

// GenerateEd25519 creates a new key from rand (crypto/rand.Reader when nil).
func GenerateEd25519(rand io.Reader) (*Ed25519, error) {
	_, key, err := ed25519.GenerateKey(rand)
	if err != nil {
		return nil, fmt.Errorf("generate ed25519 key: %w", err)
	}
	return NewEd25519(key), nil
}

// Ed25519PublicKeyDER wraps a raw 32-byte public key in its DER
// SubjectPublicKeyInfo, the form principals are derived from.
func Ed25519PublicKeyDER(pub ed25519.PublicKey) []byte {
	return append(append([]byte{}, ed25519DERPrefix...), pub...)
}

// Sender is the self-authenticating principal of the public key.
func (id *Ed25519) Sender() principal.Principal { return id.sender }

// PublicKeyDER returns the RFC 8410 DER public key.
func (id *Ed25519) PublicKeyDER() []byte { return bytes.Clone(id.der) }

// Sign returns the 64-byte Ed25519 signature of msg. Ed25519 is deterministic.
func (id *Ed25519) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(id.key, msg), nil }

// PEM encodes the key as a PKCS#8 v1 "PRIVATE KEY" block (RFC 8410, no public
// key), the layout OpenSSL writes and every IC tool reads.
func (id *Ed25519) PEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(id.key)
	if err != nil {
		return nil, fmt.Errorf("encode ed25519 key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// Curve and algorithm object identifiers, as DER contents (without tag and
// length) so they compare as bytes.
var (
	oidEd25519     = []byte{0x2b, 0x65, 0x70}                               // 1.3.101.112
	oidECPublicKey = []byte{0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01}       // 1.2.840.10045.2.1
	oidSecp256k1   = []byte{0x2b, 0x81, 0x04, 0x00, 0x0a}                   // 1.3.132.0.10
	oidPrime256v1  = []byte{0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07} // 1.2.840.10045.3.1.7
)

// parsePKCS8 reads RFC 5958 OneAsymmetricKey by hand: Go's x509 package has
// no secp256k1, and the v2 Ed25519 layout carries a public key that has to be
// checked against the seed rather than ignored.
//
//	OneAsymmetricKey ::= SEQUENCE {
//	  version INTEGER, privateKeyAlgorithm AlgorithmIdentifier,
//	  privateKey OCTET STRING, attributes [0] OPTIONAL, publicKey [1] OPTIONAL }
func parsePKCS8(der []byte) (Identity, error) {
	var (
		seq, algo, algOID, priv cryptobyte.String
		version                 int64
	)
	in := cryptobyte.String(der)
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) || !in.Empty() {
		return nil, fmt.Errorf("read PKCS#8 key: not a DER SEQUENCE")
	}
	if !seq.ReadASN1Integer(&version) || (version != 0 && version != 1) {
		return nil, fmt.Errorf("read PKCS#8 key: bad version")
	}
	if !seq.ReadASN1(&algo, cbasn1.SEQUENCE) || !algo.ReadASN1(&algOID, cbasn1.OBJECT_IDENTIFIER) {
		return nil, fmt.Errorf("read PKCS#8 key: bad algorithm identifier")
	}
	if !seq.ReadASN1(&priv, cbasn1.OCTET_STRING) {
		return nil, fmt.Errorf("read PKCS#8 key: missing private key")
	}
	var hasAttrs, hasPub bool
	var attrs, pubField cryptobyte.String
	if !seq.ReadOptionalASN1(&attrs, &hasAttrs, cbasn1.Tag(0).Constructed().ContextSpecific()) {
		return nil, fmt.Errorf("read PKCS#8 key: bad attributes")
	}
	// RFC 5958 says [1] IMPLICIT BIT STRING; ring writes it EXPLICIT. Take both.
	var pub []byte
	switch {
	case seq.PeekASN1Tag(cbasn1.Tag(1).ContextSpecific()):
		if !seq.ReadASN1(&pubField, cbasn1.Tag(1).ContextSpecific()) {
			return nil, fmt.Errorf("read PKCS#8 key: bad public key")
		}
		hasPub = true
		pub = bitStringBytes(pubField)
	case seq.PeekASN1Tag(cbasn1.Tag(1).Constructed().ContextSpecific()):
		var bits cryptobyte.String
		if !seq.ReadASN1(&pubField, cbasn1.Tag(1).Constructed().ContextSpecific()) ||
			!pubField.ReadASN1(&bits, cbasn1.BIT_STRING) || !pubField.Empty() {
			return nil, fmt.Errorf("read PKCS#8 key: bad public key")
		}
		hasPub = true
		pub = bitStringBytes(bits)
	}
	if !seq.Empty() {
		return nil, fmt.Errorf("read PKCS#8 key: trailing data")
	}
	if hasPub && pub == nil {
		return nil, fmt.Errorf("read PKCS#8 key: public key is not a whole-byte BIT STRING")
	}

	switch {
	case bytes.Equal(algOID, oidEd25519):
		if !algo.Empty() {
			return nil, fmt.Errorf("read PKCS#8 ed25519 key: algorithm has parameters")
		}
		var seed cryptobyte.String
		if !priv.ReadASN1(&seed, cbasn1.OCTET_STRING) || !priv.Empty() || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("read PKCS#8 ed25519 key: private key is not a 32-byte seed")
		}
		id := NewEd25519(ed25519.NewKeyFromSeed(seed))
		if hasPub && !bytes.Equal(pub, id.key.Public().(ed25519.PublicKey)) {
			return nil, fmt.Errorf("read PKCS#8 ed25519 key: embedded public key does not match the private key")
		}
		return id, nil
	case bytes.Equal(algOID, oidECPublicKey):
		var curve cryptobyte.String
		if !algo.ReadASN1(&curve, cbasn1.OBJECT_IDENTIFIER) {
			return nil, fmt.Errorf("read PKCS#8 EC key: missing named curve")
		}
		if !bytes.Equal(curve, oidSecp256k1) {
			return nil, fmt.Errorf("read PKCS#8 EC key: %w: curve %s, want secp256k1", ErrUnsupportedKey, curveName(curve))
		}
		// The inner ECPrivateKey usually omits the curve; the algorithm names it.
		return parseSEC1(priv, append([]byte{0x06, byte(len(curve))}, curve...))
	default:
		return nil, fmt.Errorf("read PKCS#8 key: %w: algorithm OID %x", ErrUnsupportedKey, []byte(algOID))
	}
}

// bitStringBytes returns the contents of a DER BIT STRING body with no unused
// bits, or nil.
func bitStringBytes(body cryptobyte.String) []byte {
	if len(body) < 1 || body[0] != 0 {
		return nil
	}
	return body[1:]
}

func curveName(oid []byte) string {
	switch {
	case bytes.Equal(oid, oidSecp256k1):
		return "secp256k1"
	case bytes.Equal(oid, oidPrime256v1):
		return "prime256v1 (P-256)"
	default:
		return fmt.Sprintf("OID %x", oid)
	}
}
