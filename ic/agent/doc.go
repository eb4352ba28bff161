// Package agent talks to the Internet Computer over its HTTP interface: status,
// query, call and read_state, with CBOR envelopes, request ids, ingress expiry,
// nonces and signatures, and certificate verification for everything read from
// the state tree. It uses the current endpoint versions (v4 call, v3 query and
// read_state) and steps down to the deprecated ones only for a host that
// answers them 404 or 405 (versions.go).
//
// It knows nothing of any particular canister: arguments and replies are raw
// Candid bytes. Rejections come back as *RejectError with the reject code and
// message the replica gave.
package agent
