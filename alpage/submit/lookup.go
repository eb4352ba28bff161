package submit

import (
	"context"
	"errors"
	"fmt"
	"time"

	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/readback"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
)

// LookupWindow is how far back apply looks in governance for a proposal
// it may already have made: a submit whose outcome was unknown is retried
// by a person within hours, not weeks, and an older proposal with the
// same payload is a deliberate resubmission.
const LookupWindow = 24 * time.Hour

// Finder looks governance up for a proposal neuron made with p's action
// and payload since the given time, skipping the ids in skip (those
// state.json already records under some name). It is nil when there is
// none; an error is a failure to ask.
type Finder interface {
	FindSubmitted(ctx context.Context, p *proposal.Proposal, neuron uint64, since time.Time, skip map[uint64]bool) (*Found, error)
}

// Found is a proposal governance has: its id, when it was made, and its
// status (empty when governance's is not one state.json records).
type Found struct {
	ID          uint64
	SubmittedAt time.Time
	Status      state.Status
}

func foundOf(info *nns.ProposalInfo) *Found {
	f := &Found{ID: info.ID.ID, Status: readback.StatusOf(nns.ProposalStatus(info.Status))}
	if info.ProposalTimestampSeconds != 0 {
		f.SubmittedAt = time.Unix(int64(info.ProposalTimestampSeconds), 0).UTC()
	}
	return f
}

// OutcomeUnknown says whether err, from a submit, leaves it unknown whether
// governance made the proposal: a timeout, a connection lost after the
// call was sent, a 5xx, a reply that could not be read. What is known not
// to have made one — governance's own refusal, a rejected or expired
// call, a 4xx — is not unknown.
func OutcomeUnknown(err error) bool {
	var (
		ge *nns.GovernanceError
		re *agent.RejectError
		he *agent.HTTPError
	)
	switch {
	case err == nil:
		return false
	case errors.As(err, &ge), errors.As(err, &re), errors.Is(err, agent.ErrExpired):
		return false
	case errors.As(err, &he):
		return he.StatusCode >= 500
	}
	// A timeout, an interrupt, a lost connection, an unreadable reply: the
	// call may have run.
	return true
}

// UnknownOutcomeError is a submit whose outcome is unknown and that
// governance does not (yet) show: nothing was recorded, and nothing was
// sent again.
type UnknownOutcomeError struct {
	Name   string
	Neuron uint64
	SHA256 string
	Since  time.Time
	Err    error
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("submit %q: the outcome is unknown (%v), and governance shows no proposal by neuron %d with payload sha256 %s since %s; "+
		"nothing was recorded and nothing was sent again. Run alp apply again: it looks governance up first, and submits only if it still finds none",
		e.Name, e.Err, e.Neuron, e.SHA256, e.Since.UTC().Format(time.RFC3339))
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Governance is what GovernanceFinder reads. nns.GovernanceClient
// satisfies it.
type Governance interface {
	ListProposals(ctx context.Context, req nns.ListProposalInfo) ([]nns.ProposalInfo, error)
	GetProposalInfo(ctx context.Context, id uint64) (*nns.ProposalInfo, error)
}

// listPage is list_proposals' largest page (governance's
// MAX_LIST_PROPOSAL_RESULTS); maxPages bounds one lookup.
const (
	listPage = 100
	maxPages = 50
)

// GovernanceFinder pages list_proposals, newest first, back to the
// window's start. list_proposals leaves out an ExecuteNnsFunction payload
// over 1000 bytes, so a proposal by the neuron with the right function and
// no payload is read again with get_proposal_info.
type GovernanceFinder struct{ Gov Governance }

// FindSubmitted implements Finder.
func (f GovernanceFinder) FindSubmitted(ctx context.Context, p *proposal.Proposal, neuron uint64, since time.Time, skip map[uint64]bool) (*Found, error) {
	omit := false
	req := nns.ListProposalInfo{Limit: listPage, OmitLargeFields: &omit, IncludeRewardStatus: []int32{}, ExcludeTopic: []int32{}, IncludeStatus: []int32{}}
	for range maxPages {
		page, err := f.Gov.ListProposals(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("look governance up for proposal %q: %w", p.Name, err)
		}
		for _, info := range page {
			if info.ID == nil {
				continue
			}
			switch match(p, neuron, since, skip, &info) {
			case matched:
				return foundOf(&info), nil
			case payloadLeftOut:
				full, err := f.Gov.GetProposalInfo(ctx, info.ID.ID)
				if err != nil {
					return nil, fmt.Errorf("look governance up for proposal %q: %w", p.Name, err)
				}
				if full != nil && full.ID != nil && match(p, neuron, since, skip, full) == matched {
					return foundOf(full), nil
				}
			case tooOld:
				return nil, nil
			}
		}
		if len(page) < listPage {
			return nil, nil
		}
		req.BeforeProposal = page[len(page)-1].ID
	}
	return nil, nil
}

type matchResult int

const (
	noMatch matchResult = iota
	matched
	payloadLeftOut
	tooOld
)

// match relates one listed proposal to p.
func match(p *proposal.Proposal, neuron uint64, since time.Time, skip map[uint64]bool, info *nns.ProposalInfo) matchResult {
	if info.ProposalTimestampSeconds != 0 && time.Unix(int64(info.ProposalTimestampSeconds), 0).Before(since) {
		return tooOld
	}
	if skip[info.ID.ID] || info.Proposer == nil || info.Proposer.ID != neuron || info.Proposal == nil {
		return noMatch
	}
	a := info.Proposal.Action
	if a != nil && a.ExecuteNnsFunction != nil && len(a.ExecuteNnsFunction.Payload) == 0 &&
		nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction) == p.Function && p.Function != nns.FunctionUnspecified {
		return payloadLeftOut
	}
	sum, fn, ok := readback.PayloadSHA256(a)
	if !ok || fn != p.Function || sum != p.PayloadSHA256 {
		return noMatch
	}
	return matched
}
