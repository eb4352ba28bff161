// Package identity holds the keys that sign Internet Computer requests.
//
// An identity is a key pair plus the principal derived from its public key
// (principal.SelfAuthenticating of the DER SubjectPublicKeyInfo), or the
// anonymous identity, which signs nothing. The formats read are the ones people
// already have on disk:
//
//   - Ed25519 PKCS#8 "PRIVATE KEY" PEM, both the v1 layout OpenSSL writes and
//     the v2 layout (public key included) that dfx and the Rust ring crate write;
//   - secp256k1 SEC1 "EC PRIVATE KEY" PEM, optionally preceded by an
//     "EC PARAMETERS" block, which is what dfx creates by default;
//   - secp256k1 PKCS#8 "PRIVATE KEY" PEM.
//
// The envelope carries the DER public key and a signature over
// "\x0Aic-request" || request id; the agent builds that message, identities only
// sign bytes.
package identity

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"

	"alpnib.dev/ic/principal"
)

// Identity signs requests on behalf of a principal.
type Identity interface {
	// Sender is the principal requests are sent as.
	Sender() principal.Principal
	// PublicKeyDER is the DER SubjectPublicKeyInfo that goes in the envelope's
	// sender_pubkey; nil for the anonymous identity.
	PublicKeyDER() []byte
	// Sign signs msg as the IC expects for this key type; nil for the anonymous
	// identity.
	Sign(msg []byte) ([]byte, error)
}

// Anonymous is the identity of unauthenticated callers. Its requests carry
// sender 0x04 and no public key or signature.
type Anonymous struct{}

// Sender returns principal.Anonymous.
func (Anonymous) Sender() principal.Principal { return principal.Anonymous }

// PublicKeyDER returns nil: anonymous requests are unsigned.
func (Anonymous) PublicKeyDER() []byte { return nil }

// Sign returns nil: anonymous requests are unsigned.
func (Anonymous) Sign([]byte) ([]byte, error) { return nil, nil }

// ErrUnsupportedKey is returned for a well-formed key of a kind the IC (or this
// package) does not sign with, such as a P-256 or secp160r2 key.
var ErrUnsupportedKey = errors.New("unsupported key type")

// FromPEM reads an Ed25519 or secp256k1 private key in any of the layouts
// listed in the package documentation.
func FromPEM(data []byte) (Identity, error) {
	var curveFromParams []byte // OID bytes of a preceding "EC PARAMETERS" block
	rest := bytes.TrimSpace(data)
	for len(rest) > 0 {
		block, r := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = r
		switch block.Type {
		case "EC PARAMETERS":
			curveFromParams = block.Bytes
		case "EC PRIVATE KEY":
			return parseSEC1(block.Bytes, curveFromParams)
		case "PRIVATE KEY":
			return parsePKCS8(block.Bytes)
		default:
			return nil, fmt.Errorf("read identity PEM: %w: block %q", ErrUnsupportedKey, block.Type)
		}
	}
	return nil, errors.New("read identity PEM: no private key block found")
}
