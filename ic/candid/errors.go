package candid

import (
	"errors"
	"fmt"
)

// DecodeError is the error every decoding function returns for bad input:
// Offset is the byte offset in the message where decoding stopped and Reason
// says why. Err, when set, is one of the sentinel errors below so callers
// can tell the kinds apart with errors.Is.
type DecodeError struct {
	Offset int
	Reason string
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("candid: decode at byte %d: %s", e.Offset, e.Reason)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Sentinel errors wrapped by DecodeError.
var (
	// ErrSubtype: the wire type does not fit the expected type.
	ErrSubtype = errors.New("candid: type mismatch")
	// ErrTruncated: the message ends before the value does.
	ErrTruncated = errors.New("candid: message truncated")
	// ErrTooDeep: values or types nest deeper than MaxDepth.
	ErrTooDeep = errors.New("candid: nesting too deep")
	// ErrBudget: decoding the message would cost more than its budget (see
	// MaxCost).
	ErrBudget = errors.New("candid: message too costly to decode")
	// ErrFormat: the bytes are not valid Candid.
	ErrFormat = errors.New("candid: malformed message")
)

// Limits on hostile input.
const (
	// MaxDepth bounds how deeply values may nest while decoding. Deeper input
	// fails with ErrTooDeep instead of exhausting the stack.
	MaxDepth = 512
	// BaseCost and CostPerByte make up a message's work budget, spent as
	// values are decoded: skipping a value costs 1 unit, decoding one into
	// a Go value 1 (plus its Go size/8 for elements of a vec that take no
	// wire bytes), producing a dynamic Value 16. A message may spend
	// BaseCost + CostPerByte·len(message). Only values that take no bytes
	// on the wire (null, reserved, empty records) can exceed it, which is
	// exactly the "space bomb" it is for: a 10-byte message claiming a
	// billion nulls fails at once instead of looping or allocating.
	BaseCost    = 256 << 10
	CostPerByte = 16
)

func errAt(off int, sentinel error, format string, args ...any) *DecodeError {
	return &DecodeError{Offset: off, Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

func isSubtypeErr(err error) bool {
	var de *DecodeError
	return errors.As(err, &de) && de.Err == ErrSubtype
}
