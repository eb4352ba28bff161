package agent

import (
	"errors"
	"fmt"
)

// RejectCode is the class of a rejection, as the interface spec numbers them.
type RejectCode uint64

// The reject codes of the interface spec ("Reject codes").
const (
	SysFatal           RejectCode = 1
	SysTransient       RejectCode = 2
	DestinationInvalid RejectCode = 3
	CanisterReject     RejectCode = 4
	CanisterError      RejectCode = 5
	SysUnknown         RejectCode = 6
)

// String is the spec's name for the code, e.g. "CANISTER_REJECT".
func (c RejectCode) String() string {
	switch c {
	case SysFatal:
		return "SYS_FATAL"
	case SysTransient:
		return "SYS_TRANSIENT"
	case DestinationInvalid:
		return "DESTINATION_INVALID"
	case CanisterReject:
		return "CANISTER_REJECT"
	case CanisterError:
		return "CANISTER_ERROR"
	case SysUnknown:
		return "SYS_UNKNOWN"
	}
	return fmt.Sprintf("REJECT_CODE_%d", uint64(c))
}

// RejectError is a request the IC (or the canister) turned down. Code and
// Message come from the replica; ErrorCode is its optional finer-grained
// code such as "IC0302".
type RejectError struct {
	Code      RejectCode
	Message   string
	ErrorCode string
	// RequestID is set for calls.
	RequestID *RequestID
}

func (e *RejectError) Error() string {
	s := fmt.Sprintf("rejected (%s", e.Code)
	if e.ErrorCode != "" {
		s += ", " + e.ErrorCode
	}
	return s + "): " + e.Message
}

// HTTPError is a response with a non-success HTTP status. The IC answers
// malformed or unauthorized requests this way, with a text body.
type HTTPError struct {
	StatusCode int
	Body       string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Body)
}

// Errors of the call lifecycle.
var (
	// ErrRequestDone: the request finished, but its reply has been dropped
	// from the state tree (asked too late).
	ErrRequestDone = errors.New("request is done and its reply is no longer available")
	// ErrExpired: the request never showed up as received before its ingress
	// expiry, so it will not run.
	ErrExpired = errors.New("request expired before the IC received it")
	// ErrMalformedResponse: the replica's answer could not be decoded.
	ErrMalformedResponse = errors.New("malformed response")
)
