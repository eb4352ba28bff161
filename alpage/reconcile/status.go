package reconcile

import "alpnib.dev/internal/term"

// Status is the word at the start of a report row. Every status is one of
// the constants below; Drift and Color say what each means, in one place.
type Status string

// The statuses, by the section that uses them (some are shared).
const (
	// membership of a declared subnet; record facts
	InSync       Status = "in-sync"
	Missing      Status = "missing"      // declared member, not a member
	Deregistered Status = "deregistered" // declared member, registry record gone
	Unmanaged    Status = "unmanaged"    // live, no node block at all
	WrongSubnet  Status = "wrong-subnet" // its block puts it elsewhere (another subnet, unassigned, decommissioned)
	Mismatch     Status = "mismatch"     // a record fact differs

	// operators, providers, nodes
	OK               Status = "ok"
	DCMismatch       Status = "dc-mismatch"
	NotOwned         Status = "not-owned" // the declared provider does not own the operator
	RegionMismatch   Status = "region-mismatch"
	ProviderAbsent   Status = "provider-absent"
	Decommissioned   Status = "decommissioned"   // expected absent, and it is
	StillRegistered  Status = "still-registered" // expected absent, still there
	OperatorMismatch Status = "operator-mismatch"
	Gone             Status = "gone"
	Unknown          Status = "unknown" // could not tell: never drift
	ChipChanged      Status = "chip-changed"
	ChipMissing      Status = "chip-missing"
	ChipUndeclared   Status = "chip-undeclared"
	Malformed        Status = "malformed"
	AMDUnverified    Status = "amd-unverified"
	VersionMismatch  Status = "version-mismatch"
	Unreachable      Status = "unreachable"
	// ConfigMismatch: an operator's allowance, rewardable nodes or IPv6
	// differs from its record.
	ConfigMismatch Status = "config-mismatch"
	// HostOSMismatch: a node's record names another HostOS version.
	HostOSMismatch Status = "hostos-mismatch"
)

// Drift reports whether a row with this status fails the CI gate. What is
// merely unknown (a record that could not be read, a node that could not
// be reached) is never drift.
func (s Status) Drift() bool {
	switch s {
	case Missing, Deregistered, Unmanaged, WrongSubnet, Mismatch, DCMismatch, NotOwned, RegionMismatch, ProviderAbsent, StillRegistered,
		OperatorMismatch, Gone, ChipChanged, ChipMissing, ChipUndeclared, Malformed, AMDUnverified,
		VersionMismatch, ConfigMismatch, HostOSMismatch:
		return true
	}
	return false
}

// Color is the colour a status is painted in on a terminal: green for
// agreement, red for drift, yellow for what could not be told, dim for
// what is expected to be gone.
func (s Status) Color() term.Color {
	switch {
	case s.Drift():
		return term.Red
	case s == Unknown || s == Unreachable:
		return term.Yellow
	case s == Decommissioned:
		return term.Dim
	}
	return term.Green
}

// statuses lists every status, for tests and for padding.
var statuses = []Status{InSync, Missing, Deregistered, Unmanaged, WrongSubnet, Mismatch, OK, DCMismatch, NotOwned, RegionMismatch, ProviderAbsent,
	Decommissioned, StillRegistered, OperatorMismatch, Gone, Unknown, ChipChanged, ChipMissing,
	ChipUndeclared, Malformed, AMDUnverified, VersionMismatch, Unreachable, ConfigMismatch, HostOSMismatch}
