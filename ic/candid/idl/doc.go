// Package idl reads the two text forms of Candid: service descriptions
// (.did files) and Candid text values.
//
// ParseFile reads a .did file and its imports, checks it the way the
// reference implementation does (unbound names, cycles made only of names,
// duplicate field ids and hash collisions, methods that are not functions,
// oneway functions with results, imported services that are classes or
// missing) and returns the named types and the main service as candid.Type
// graphs, with recursive definitions as cycles. That lets a Go program check
// its own Candid types against a canister's published interface.
//
// ParseValues reads Candid text arguments at expected types, with the same
// subtyping rules the binary decoder applies, so a textual value and a
// decoded one compare equal with candid.Value.Equal.
//
// The package also runs the official conformance format (*.test.did):
// ReadTestFile and Assertion.Run. The conformance test of this package runs
// shared/conformance/candid and any folder named by CANDID_TESTS, printing
// one "<file>: N passed, M failed" line per file (visible with go test -v).
//
// Errors carry the position they are about: *Error with file:line:column.
package idl
