// Package principal implements Internet Computer principals: the opaque
// identifiers of users, canisters and subnets, and their textual form.
//
// A principal is at most 29 bytes. Its text is the lower-case base32 (RFC 4648,
// no padding) of CRC32(bytes) in big-endian order followed by the bytes, with a
// dash after every five characters. Parsing is case-insensitive, as the IC
// interface specification says; output is always lower case.
//
// Principal is a small comparable value, so it can be used with == and as a map
// key; the zero value is the management canister (aaaaa-aa, the empty byte
// string).
package principal

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// MaxLength is the largest number of bytes a principal may have.
const MaxLength = 29

// Class tags: the last byte of a principal says what kind of id it is.
const (
	tagOpaque             = 0x01
	tagSelfAuthenticating = 0x02
	tagAnonymous          = 0x04
)

// Principal is an Internet Computer principal id. It wraps the raw bytes in a
// string so that it is immutable and comparable.
type Principal struct {
	raw string
}

var (
	// ManagementCanister is the empty principal, aaaaa-aa, the virtual canister
	// that creates and manages other canisters.
	ManagementCanister = Principal{}
	// Anonymous is the principal of unauthenticated callers, 2vxsx-fae.
	Anonymous = Principal{raw: string([]byte{tagAnonymous})}
)

// Errors returned by Decode and FromBytes. They are wrapped with detail, so
// compare with errors.Is.
var (
	ErrEmpty        = errors.New("principal text is empty")
	ErrCharacter    = errors.New("invalid character in principal text")
	ErrGrouping     = errors.New("principal text is not grouped in dash-separated blocks of 5")
	ErrBase32       = errors.New("invalid base32 in principal text")
	ErrTooShort     = errors.New("principal text too short to hold a checksum")
	ErrTooLong      = errors.New("principal longer than 29 bytes")
	ErrChecksum     = errors.New("principal checksum mismatch")
	ErrNonCanonical = errors.New("principal text is not in canonical form")
)

var encoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// FromBytes returns the principal with the given raw bytes.
func FromBytes(b []byte) (Principal, error) {
	if len(b) > MaxLength {
		return Principal{}, fmt.Errorf("%w: %d bytes", ErrTooLong, len(b))
	}
	return Principal{raw: string(b)}, nil
}

// MustFromBytes is FromBytes for constants; it panics on a length error.
func MustFromBytes(b []byte) Principal {
	p, err := FromBytes(b)
	if err != nil {
		panic(err)
	}
	return p
}

// Decode parses the textual form of a principal. Upper-case letters are
// accepted. The error says which rule the text breaks.
func Decode(text string) (Principal, error) {
	if text == "" {
		return Principal{}, ErrEmpty
	}
	lower := make([]byte, 0, len(text))
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '2' && c <= '7', c == '-':
		default:
			return Principal{}, fmt.Errorf("%w: %q at offset %d", ErrCharacter, c, i)
		}
		lower = append(lower, c)
	}
	// Every block but the last has exactly five characters; the last has 1..5.
	groups := strings.Split(string(lower), "-")
	for i, g := range groups {
		last := i == len(groups)-1
		if len(g) == 0 || len(g) > 5 || (!last && len(g) != 5) {
			return Principal{}, fmt.Errorf("%w: block %d is %q", ErrGrouping, i+1, g)
		}
	}
	joined := strings.Join(groups, "")
	switch len(joined) % 8 {
	case 1, 3, 6:
		return Principal{}, fmt.Errorf("%w: %d characters cannot encode whole bytes", ErrBase32, len(joined))
	}
	decoded, err := encoding.DecodeString(joined)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %v", ErrBase32, err)
	}
	if len(decoded) < 4 {
		return Principal{}, fmt.Errorf("%w: %d bytes decoded", ErrTooShort, len(decoded))
	}
	data := decoded[4:]
	if len(data) > MaxLength {
		return Principal{}, fmt.Errorf("%w: %d bytes", ErrTooLong, len(data))
	}
	want := binary.BigEndian.Uint32(decoded[:4])
	if got := crc32.ChecksumIEEE(data); got != want {
		return Principal{}, fmt.Errorf("%w: text says %08x, bytes give %08x", ErrChecksum, want, got)
	}
	p := Principal{raw: string(data)}
	if p.String() != string(lower) {
		return Principal{}, fmt.Errorf("%w: %q should be %q", ErrNonCanonical, text, p.String())
	}
	return p, nil
}

// MustDecode is Decode for constants in code and tests; it panics on error.
func MustDecode(text string) Principal {
	p, err := Decode(text)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the canonical textual form, e.g. "rrkah-fqaaa-aaaaa-aaaaq-cai".
func (p Principal) String() string {
	buf := make([]byte, 4+len(p.raw))
	binary.BigEndian.PutUint32(buf, crc32.ChecksumIEEE([]byte(p.raw)))
	copy(buf[4:], p.raw)
	enc := encoding.EncodeToString(buf)
	var b strings.Builder
	b.Grow(len(enc) + len(enc)/5)
	for i := 0; i < len(enc); i += 5 {
		if i > 0 {
			b.WriteByte('-')
		}
		b.WriteString(enc[i:min(i+5, len(enc))])
	}
	return b.String()
}

// Bytes returns a copy of the raw bytes.
func (p Principal) Bytes() []byte { return []byte(p.raw) }

// Len is the number of raw bytes.
func (p Principal) Len() int { return len(p.raw) }

// IsAnonymous reports whether p is the anonymous principal.
func (p Principal) IsAnonymous() bool { return p == Anonymous }

// IsManagementCanister reports whether p is the empty principal aaaaa-aa.
func (p Principal) IsManagementCanister() bool { return p.raw == "" }

// IsSelfAuthenticating reports whether p was derived from a public key.
func (p Principal) IsSelfAuthenticating() bool {
	return len(p.raw) == sha256.Size224+1 && p.raw[len(p.raw)-1] == tagSelfAuthenticating
}

// Compare orders principals by their raw bytes, the order the IC uses for
// canister ranges. It returns -1, 0 or +1.
func (p Principal) Compare(q Principal) int { return strings.Compare(p.raw, q.raw) }

// SelfAuthenticating returns the principal of a public key: SHA-224 of its DER
// SubjectPublicKeyInfo followed by the tag 0x02.
func SelfAuthenticating(derPublicKey []byte) Principal {
	h := sha256.Sum224(derPublicKey)
	return Principal{raw: string(append(h[:], tagSelfAuthenticating))}
}

// CanisterID returns the id of the canister with the given index: the index as
// 8 big-endian bytes followed by 0x01 0x01 (an opaque id), as the system
// assigns them.
func CanisterID(index uint64) Principal {
	var b [10]byte
	binary.BigEndian.PutUint64(b[:8], index)
	b[8], b[9] = tagOpaque, tagOpaque
	return Principal{raw: string(b[:])}
}

// CanisterIndex is the inverse of CanisterID; ok is false if p does not have
// that shape.
func (p Principal) CanisterIndex() (index uint64, ok bool) {
	if len(p.raw) != 10 || p.raw[8] != tagOpaque || p.raw[9] != tagOpaque {
		return 0, false
	}
	return binary.BigEndian.Uint64([]byte(p.raw[:8])), true
}

// MarshalText implements encoding.TextMarshaler, so principals appear as their
// text in JSON, TOML and friends.
func (p Principal) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (p *Principal) UnmarshalText(text []byte) error {
	q, err := Decode(string(text))
	if err != nil {
		return err
	}
	*p = q
	return nil
}
