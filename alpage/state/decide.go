package state

import "fmt"

// Decision is what apply may do with a declared proposal given its record.
type Decision int

const (
	// Submit: go ahead.
	Submit Decision = iota
	// NothingToDo: the same payload was already submitted.
	NothingToDo
	// Refuse: apply must stop; the reason says why.
	Refuse
)

// Decide applies the apply rules of the spec to a proposal's record and the
// hash of the payload the configuration declares now:
//
//   - no record → submit;
//   - a terminal record → refuse, even with force (rename the block);
//   - force → submit;
//   - same hash → nothing to do;
//   - changed hash → refuse without force.
func Decide(name string, rec *Proposal, payloadSHA256 string, force bool) (Decision, string) {
	switch {
	case rec == nil:
		return Submit, ""
	case rec.Status.Terminal():
		return Refuse, fmt.Sprintf("proposal %q was submitted as proposal %d and is %s; its payload on-chain is immutable, so rename the proposal block to submit a new one (--force does not override this)", name, rec.ProposalID, rec.Status)
	case force:
		return Submit, ""
	case rec.PayloadSHA256 == payloadSHA256:
		return NothingToDo, fmt.Sprintf("proposal %q was already submitted as proposal %d with this payload; nothing to do", name, rec.ProposalID)
	default:
		return Refuse, fmt.Sprintf("proposal %q was submitted as proposal %d with payload %s, and the config now declares payload %s; submit again with --force, or rename the proposal block", name, rec.ProposalID, ShortHash(rec.PayloadSHA256), ShortHash(payloadSHA256))
	}
}

// ShortHash is the first 12 characters of a payload hash, as alp prints it.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
