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
//   - another kind than the block's → refuse without force, whatever the
//     hash: the record is of another proposal, or state.json was edited;
//   - same hash → nothing to do;
//   - changed hash → refuse without force.
func Decide(name string, rec *Proposal, kind, payloadSHA256 string, force bool) (Decision, string) {
	switch {
	case rec == nil:
		return Submit, ""
	case rec.Status.Terminal():
		return Refuse, fmt.Sprintf("proposal %q was submitted as proposal %d and is %s; its payload on-chain is immutable, so rename the proposal block to submit a new one (--force does not override this)", name, rec.ProposalID, rec.Status)
	case force:
		return Submit, ""
	case !rec.KindIs(kind):
		return Refuse, fmt.Sprintf("state.json records proposal %q as proposal %d of kind %s, and its block declares kind %s; %s, or submit this block again with --force", name, rec.ProposalID, rec.Kind, kind, KindFix(rec, kind, payloadSHA256))
	case rec.PayloadSHA256 == payloadSHA256:
		return NothingToDo, fmt.Sprintf("proposal %q was already submitted as proposal %d with this payload; nothing to do", name, rec.ProposalID)
	default:
		return Refuse, fmt.Sprintf("proposal %q was submitted as proposal %d with payload %s, and the config now declares payload %s; submit again with --force, or rename the proposal block", name, rec.ProposalID, ShortHash(rec.PayloadSHA256), ShortHash(payloadSHA256))
	}
}

// ShortHash is the first 12 characters of a payload hash, as alp prints it,
// or all of a shorter one (a hand-edited state.json may hold anything).
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// formerKinds maps a kind's name before a rename to its name now: the
// reference tool recorded a membership change as "resize" until v0.3.0
// renamed the kind (testdata/reference-v0.4.0.json keeps such an entry).
var formerKinds = map[string]string{"resize": "membership"}

// KindIs reports whether the record is of kind: its kind as written, or
// the name kind had when the record was written. A record without a kind
// claims none, so it is of any.
func (p *Proposal) KindIs(kind string) bool {
	return p.Kind == kind || p.Kind == "" || formerKinds[p.Kind] == kind
}

// KindFix says what to do about a record of another kind than the block
// declaring kind with payloadSHA256. The same payload under two kinds
// means state.json was edited or damaged (each kind encodes a payload of
// its own type); a changed one, that the block was.
func KindFix(rec *Proposal, kind, payloadSHA256 string) string {
	if rec.PayloadSHA256 == payloadSHA256 {
		return fmt.Sprintf("with the same payload, so state.json was edited or is damaged: restore it from git, or set its kind to %s if proposal %d is one", kind, rec.ProposalID)
	}
	return fmt.Sprintf("the block's kind and payload changed since submit: put kind = %q back, or rename the block to make a new proposal", rec.Kind)
}
