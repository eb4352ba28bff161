package candid

import (
	"fmt"
	"math/big"

	"alpnib.dev/ic/principal"
)

// Go types with a Candid meaning of their own; the package documentation
// gives the rest of the mapping.

// Natural is Candid's arbitrary-precision nat. The zero value is 0.
//
// A field that only ever holds amounts fitting 64 bits may be a uint64
// instead: Unmarshal reads a wire nat into any unsigned Go integer, failing
// when the number does not fit. Marshal writes a uint64 as nat64, so use
// Natural when the interface says nat.
type Natural struct{ b big.Int }

// NaturalOf returns u as a Natural.
func NaturalOf(u uint64) Natural {
	var n Natural
	n.b.SetUint64(u)
	return n
}

// NaturalFromBig returns a copy of x as a Natural; x must not be negative.
func NaturalFromBig(x *big.Int) (Natural, error) {
	var n Natural
	if x.Sign() < 0 {
		return n, fmt.Errorf("candid: nat cannot be negative (%s)", x)
	}
	n.b.Set(x)
	return n, nil
}

// Big returns a copy of the number.
func (n Natural) Big() *big.Int { return new(big.Int).Set(&n.b) }

// Uint64 returns the number and whether it fits in 64 bits.
func (n Natural) Uint64() (uint64, bool) { return n.b.Uint64(), n.b.IsUint64() }

// String returns the number in decimal.
func (n Natural) String() string { return n.b.String() }

// Integer is Candid's arbitrary-precision int. The zero value is 0. An
// int64 field also reads a wire int (or nat) that fits.
type Integer struct{ b big.Int }

// IntegerOf returns i as an Integer.
func IntegerOf(i int64) Integer {
	var n Integer
	n.b.SetInt64(i)
	return n
}

// IntegerFromBig returns a copy of x as an Integer.
func IntegerFromBig(x *big.Int) Integer {
	var n Integer
	n.b.Set(x)
	return n
}

// Big returns a copy of the number.
func (n Integer) Big() *big.Int { return new(big.Int).Set(&n.b) }

// Int64 returns the number and whether it fits in 64 bits.
func (n Integer) Int64() (int64, bool) { return n.b.Int64(), n.b.IsInt64() }

// String returns the number in decimal.
func (n Integer) String() string { return n.b.String() }

// Unit is Candid's null as a Go type: a field of type Unit encodes as null
// and decodes only from null. In a variant, a case of type *struct{} or
// *Unit is a case without data (`variant { a; b }`).
type Unit struct{}

// Ignore is Candid's reserved as a Go type: it encodes as reserved and
// decodes from anything, keeping nothing. Use it to keep a position in a
// tuple whose value you do not need.
type Ignore struct{}

// OneOf marks a Go struct as a Candid variant: embed it, and give the
// struct one pointer field per case, each tagged with the case name.
// Exactly one field is non-nil in a value; Unmarshal sets the one the
// message carries and nils the others. A case without data is *struct{}.
//
//	type Result struct {
//		candid.OneOf
//		Ok  *uint64 `candid:"Ok"`
//		Err *string `candid:"Err"`
//	}
//
// A struct of pointers without the marker is a record of opt fields.
type OneOf struct{}

// FuncRef is a reference to a canister method (a Candid func value). It is
// encoded with the type `func () -> ()`; it decodes from a reference of any
// func type.
type FuncRef struct {
	Principal principal.Principal
	Method    string
}

// ServiceRef is a reference to a canister (a Candid service value), encoded
// with the type `service {}` and decoded from any service reference.
type ServiceRef struct {
	Principal principal.Principal
}
