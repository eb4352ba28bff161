// Package localnet is a local Internet Computer replica for tests and the
// devnet: an HTTP server on loopback speaking every current version of the
// IC HTTP interface (status with a root key; v4, v3 and v2 call; v3 and v2
// query; v3 and v2 read_state of canisters and subnets), certifying its
// answers with BLS under a root key generated at start (and, for an
// optional second subnet, a delegation from it), and hosting canisters
// written in Go.
//
// It validates envelopes like a replica — CBOR, ingress_expiry window,
// the sender's signature and that the sender is the self-authenticating
// principal of the key (or anonymous) — and rejects bad ones the way a
// replica does: HTTP 400 for a malformed or unauthenticated request, a
// reject with the replica's reject code and error code for a request a
// canister cannot or will not serve.
package localnet

import (
	"context"
	"errors"
	"fmt"

	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/principal"
)

// RejectCode is the IC's reject code, the same type the agent reports, so a
// canister's reject reaches the caller's agent.RejectError unchanged.
type RejectCode = agent.RejectCode

// Reject codes of the IC interface specification.
const (
	SysFatal           = agent.SysFatal
	SysTransient       = agent.SysTransient
	DestinationInvalid = agent.DestinationInvalid
	CanisterReject     = agent.CanisterReject
	CanisterError      = agent.CanisterError
)

// Reject is a rejected call: a canister's explicit reject, or the system's
// refusal to deliver it.
type Reject struct {
	Code      RejectCode
	Message   string
	ErrorCode string // e.g. "IC0406"
}

func (r *Reject) Error() string {
	return fmt.Sprintf("reject code %d (%s): %s", r.Code, r.ErrorCode, r.Message)
}

// Rejectf is a canister's explicit reject (CANISTER_REJECT, IC0406).
func Rejectf(format string, args ...any) *Reject {
	return &Reject{Code: CanisterReject, ErrorCode: "IC0406", Message: fmt.Sprintf(format, args...)}
}

// Call is one message to a canister.
type Call struct {
	Caller principal.Principal
	Method string
	Arg    []byte // Candid
	// Query is set for a query call (which cannot change state).
	Query bool
}

// Canister is a canister written in Go.
type Canister interface {
	// Method reports whether the canister exports name and whether it is a
	// query method (callable as a query and as an update) rather than an
	// update method (callable only as an update).
	Method(name string) (exists, query bool)
	// Handle runs the call and returns the Candid reply. A *Reject error is
	// returned to the caller as is; any other error is a trap
	// (CANISTER_ERROR, IC0503).
	Handle(ctx context.Context, c Call) ([]byte, error)
}

// Method is one method of a Methods canister.
type Method struct {
	Query   bool
	Handler func(ctx context.Context, caller principal.Principal, arg []byte) ([]byte, error)
}

// Methods is a Canister made of a method table.
type Methods map[string]Method

// Method implements Canister.
func (m Methods) Method(name string) (bool, bool) {
	x, ok := m[name]
	return ok, x.Query
}

// Handle implements Canister.
func (m Methods) Handle(ctx context.Context, c Call) ([]byte, error) {
	x, ok := m[c.Method]
	if !ok {
		return nil, errors.New("no such method") // guarded by the server
	}
	return x.Handler(ctx, c.Caller, c.Arg)
}
