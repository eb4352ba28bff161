package proposal

import (
	"fmt"

	"alpnib.dev/alpage/state"
	"alpnib.dev/internal/term"
)

// Sync is how a declared proposal relates to what state.json recorded.
type Sync string

// The sync states `alp list` shows.
const (
	NotSubmitted Sync = "not submitted"
	InSync       Sync = "in sync"
	Drift        Sync = "DRIFT"
	// Settled is a proposal that reached a terminal status (executed,
	// rejected, failed) and whose config changed since: a note, not
	// drift, since its payload on-chain is immutable and nothing can be
	// resubmitted under its name.
	Settled Sync = "settled"
	// Undeclared is a proposal state.json records under a name no
	// proposal block declares (renamed or deleted since): shown so that
	// what was submitted stays visible offline, and never drift.
	Undeclared Sync = "not declared"
)

// Color is the colour the word is shown in on a terminal.
func (s Sync) Color() term.Color {
	switch s {
	case InSync:
		return term.Green
	case Drift:
		return term.Red
	case Settled, Undeclared:
		return term.Dim
	}
	return term.Yellow
}

// RecordedHash is the hash to hold rec against (state.Decide): rec's own when it
// records this declaration's payload (Recorded), else the payload's.
func (p *Proposal) RecordedHash(rec *state.Proposal) string {
	if p.Recorded(rec) {
		return rec.PayloadSHA256
	}
	return p.PayloadSHA256
}

// Compare relates the kind and payload the config declares now to its
// record (nil when never submitted) and returns the sync state and, for
// drift or a settled proposal, what it means. A record of another kind is
// drift even with the same payload hash: state.json was edited or damaged.
func Compare(p *Proposal, rec *state.Proposal) (Sync, string) {
	sameKind := rec != nil && rec.KindIs(string(p.Kind))
	same := p.Recorded(rec)
	switch {
	case rec == nil:
		return NotSubmitted, ""
	case sameKind && same:
		return InSync, ""
	case !same && rec.Status.Terminal():
		return Settled, "config has since changed; payload is immutable"
	case !sameKind:
		return Drift, fmt.Sprintf("state.json records proposal %q as kind %s, its block declares %s; %s", p.Name, rec.Kind, p.Kind, state.KindFix(rec, string(p.Kind), p.RecordedHash(rec)))
	default:
		return Drift, "config payload changed since submit"
	}
}
