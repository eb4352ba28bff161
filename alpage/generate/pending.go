package generate

import (
	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/nns"
)

// PendingDeclared is what the declared proposals that may still execute
// will change: those state.json does not record, and those it records as
// open or adopted (or without a status yet). An executed one shows in the
// live registry already; a rejected or failed one changes nothing.
func PendingDeclared(ps []*config.Proposal, st *state.State) []Change {
	var out []Change
	for _, p := range ps {
		if e := st.Proposals[p.Name]; e != nil && e.Status.Terminal() {
			continue
		}
		out = append(out, ChangesOf(p)...)
	}
	return out
}

// ChangesOf is what a declared proposal changes.
func ChangesOf(p *config.Proposal) []Change {
	if p.Body == nil {
		return nil
	}
	return p.Body.Closes()
}

// PendingInGovernance is what the open or adopted proposals governance
// lists will change, whoever proposed them: an action alp does not make,
// or a payload it cannot read, changes nothing it generates.
func PendingInGovernance(infos []nns.ProposalInfo) []Change {
	var out []Change
	for _, info := range infos {
		if s := nns.ProposalStatus(info.Status); (s != nns.StatusOpen && s != nns.StatusAdopted) || info.Proposal == nil {
			continue
		}
		out = append(out, ChangesOfAction(info.Proposal.Action)...)
	}
	return out
}

// ChangesOfAction is what an on-chain action changes.
func ChangesOfAction(a *nns.Action) []Change { return kinds.ChangesOfAction(a) }
