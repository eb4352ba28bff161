package submit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"alpnib.dev/alpage/proposal"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/agent"
	"alpnib.dev/ic/nns"
)

// fakeGovernance holds proposals by id, and lists them newest first as
// list_proposals does, leaving out ExecuteNnsFunction payloads over 1000
// bytes.
type fakeGovernance struct {
	proposals []nns.ProposalInfo // ascending ids
	lists     int
	infos     []uint64
}

var clock = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func (g *fakeGovernance) make(p *proposal.Proposal, neuron uint64, at time.Time) uint64 {
	id := uint64(len(g.proposals) + 100)
	a := &nns.Action{}
	if p.Action.ExecuteNnsFunction != nil {
		a.ExecuteNnsFunction = &nns.ExecuteNnsFunction{NnsFunction: int32(p.Function), Payload: p.Payload}
	} else {
		a.AddOrRemoveNodeProvider = p.Action.AddOrRemoveNodeProvider
	}
	g.proposals = append(g.proposals, nns.ProposalInfo{ID: &nns.ProposalID{ID: id}, Proposer: &nns.NeuronID{ID: neuron}, Status: int32(nns.StatusOpen),
		ProposalTimestampSeconds: uint64(at.Unix()), Proposal: &nns.Proposal{Action: a}})
	return id
}

func (g *fakeGovernance) ListProposals(_ context.Context, req nns.ListProposalInfo) ([]nns.ProposalInfo, error) {
	g.lists++
	var out []nns.ProposalInfo
	for i := len(g.proposals) - 1; i >= 0 && len(out) < int(req.Limit); i-- {
		p := g.proposals[i]
		if req.BeforeProposal != nil && p.ID.ID >= req.BeforeProposal.ID {
			continue
		}
		if a := p.Proposal.Action; a.ExecuteNnsFunction != nil && len(a.ExecuteNnsFunction.Payload) > 1000 {
			short := *a.ExecuteNnsFunction
			short.Payload = nil
			p.Proposal = &nns.Proposal{Action: &nns.Action{ExecuteNnsFunction: &short}}
		}
		out = append(out, p)
	}
	return out, nil
}

func (g *fakeGovernance) GetProposalInfo(_ context.Context, id uint64) (*nns.ProposalInfo, error) {
	g.infos = append(g.infos, id)
	for _, p := range g.proposals {
		if p.ID.ID == id {
			return &p, nil
		}
	}
	return nil, nil
}

// droppingSubmitter makes the proposal in gov, then loses the answer.
type droppingSubmitter struct {
	gov     *fakeGovernance
	made    bool // whether the call ran before the answer was lost
	err     error
	submits int
}

func (s *droppingSubmitter) Submit(_ context.Context, p *proposal.Proposal, neuron uint64) (uint64, error) {
	s.submits++
	if s.made {
		s.gov.make(p, neuron, clock)
	}
	return 0, s.err
}

var errLostConnection = fmt.Errorf("call manage_neuron: POST /api/v3/canister/rrkah-fqaaa-aaaaa-aaaaq-cai/call: %w", io.ErrUnexpectedEOF)

func retryApply(t *testing.T, f *fakes, gov *fakeGovernance, sub Submitter, req Request) (*Result, string, error) {
	t.Helper()
	s := f.steps()
	s.Find = GovernanceFinder{Gov: gov}
	if sub != nil {
		s.Submit = sub
	}
	var waits []time.Duration
	s.Lookups = []time.Duration{0, time.Second, 2 * time.Second}
	s.Wait = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
	if req.Proposal == nil {
		req.Proposal = declared(t, "add-n2")
	}
	req.Principal, req.Host, req.Neuron = me, "http://127.0.0.1:4943", 42
	var out bytes.Buffer
	res, err := Apply(context.Background(), s, req, &out, &out)
	return res, out.String(), err
}

func TestASubmitWhoseAnswerIsLostIsFoundInGovernanceAndRecordedNotSentAgain(t *testing.T) {
	f, gov := newFakes(), &fakeGovernance{}
	sub := &droppingSubmitter{gov: gov, made: true, err: errLostConnection}
	res, out, err := retryApply(t, f, gov, sub, Request{Yes: true})
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	rec := f.saved.Proposals["add-n2"]
	if sub.submits != 1 || res.Outcome != Submitted || res.ProposalID != 100 || rec == nil || rec.ProposalID != 100 || rec.Neuron != 42 {
		t.Fatalf("submits %d, result %+v, recorded %+v\n%s", sub.submits, res, rec, out)
	}
	if !strings.Contains(out, "the outcome is unknown") || !strings.Contains(res.Message, "the answer was lost") {
		t.Errorf("the lost answer is not said:\n%s\n%s", out, res.Message)
	}
}

func TestAnUnknownOutcomeGovernanceDoesNotShowIsSaidAndNothingIsSentAgain(t *testing.T) {
	f, gov := newFakes(), &fakeGovernance{}
	sub := &droppingSubmitter{gov: gov, err: fmt.Errorf("call manage_neuron: %w", context.DeadlineExceeded)}
	_, out, err := retryApply(t, f, gov, sub, Request{Yes: true})
	var unknown *UnknownOutcomeError
	if !errors.As(err, &unknown) || sub.submits != 1 || slices.Contains(f.calls, "save") {
		t.Fatalf("err %v, submits %d, steps %v\n%s", err, sub.submits, f.calls, out)
	}
	// one look-up before anything else, then one per wait
	if gov.lists != 1+3 {
		t.Errorf("governance was listed %d times, want 4", gov.lists)
	}
	for _, want := range []string{"outcome is unknown", "neuron 42", "nothing was sent again", "Run alp apply again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

func TestAnApplyFindsWhatAnEarlierApplyMadeAndRecordsItBeforeAnythingElse(t *testing.T) {
	f, gov := newFakes(), &fakeGovernance{}
	p := declared(t, "add-n2")
	gov.make(p, 42, clock.Add(-time.Hour))
	res, out, err := retryApply(t, f, gov, nil, Request{Yes: true})
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	rec := f.saved.Proposals["add-n2"]
	if res.Outcome != Recorded || res.ProposalID != 100 || rec.ProposalID != 100 || rec.SubmittedAt != "2026-11-29T11:00:00Z" || rec.Status != state.StatusOpen {
		t.Fatalf("result %+v, recorded %+v\n%s", res, rec, out)
	}
	if !slices.Equal(f.calls, []string{"save"}) {
		t.Errorf("steps %v: found, apply should only record", f.calls)
	}
	// without --yes it says so and records nothing
	f = newFakes()
	res, _, err = retryApply(t, f, gov, nil, Request{})
	if err != nil || res.Outcome != DryRunOnly || !strings.Contains(res.Message, "proposal 100") || len(f.calls) != 0 {
		t.Fatalf("without --yes: %+v %v %v", res, err, f.calls)
	}
}

func TestTheLookUpSkipsRecordedIdsOtherNeuronsOtherPayloadsAndOldProposals(t *testing.T) {
	p := declared(t, "add-n2")
	other := declared(t, "drop-n3")
	gov := &fakeGovernance{}
	gov.make(p, 42, clock.Add(-25*time.Hour)) // 100: too old
	gov.make(p, 7, clock)                     // 101: another neuron
	gov.make(other, 42, clock)                // 102: another payload
	gov.make(p, 42, clock)                    // 103: recorded under another name
	f := newFakes()
	f.st.Proposals["earlier"] = newEntry(Request{Proposal: p, Neuron: 42}, 103, clock)
	var calls int
	sub := submitterFunc(func() (uint64, error) { calls++; return 200, nil })
	res, out, err := retryApply(t, f, gov, sub, Request{Yes: true})
	if err != nil || res.Outcome != Submitted || res.ProposalID != 200 || calls != 1 {
		t.Fatalf("res %+v err %v calls %d\n%s", res, err, calls, out)
	}
}

func TestAPayloadListProposalsLeavesOutIsReadWithGetProposalInfo(t *testing.T) {
	p := declared(t, "add-n2")
	big := *p
	big.Payload = bytes.Repeat([]byte{1}, 1500)
	sum := sha256.Sum256(big.Payload)
	big.PayloadSHA256 = hex.EncodeToString(sum[:])
	gov := &fakeGovernance{}
	id := gov.make(&big, 42, clock) // the oldest: on the second page
	other := declared(t, "drop-n3")
	for range 150 {
		gov.make(other, 42, clock)
	}
	found, err := GovernanceFinder{Gov: gov}.FindSubmitted(context.Background(), &big, 42, clock.Add(-time.Hour), nil)
	if err != nil || found == nil || found.ID != id || !slices.Equal(gov.infos, []uint64{id}) || gov.lists != 2 {
		t.Fatalf("found %+v err %v; get_proposal_info %v; pages %d", found, err, gov.infos, gov.lists)
	}
}

func TestADefiniteRefusalIsNotLookedUpAgain(t *testing.T) {
	f, gov := newFakes(), &fakeGovernance{}
	sub := &droppingSubmitter{gov: gov, err: &nns.GovernanceError{ErrorType: nns.ErrorTypeInvalidProposal, ErrorMessage: "no"}}
	_, _, err := retryApply(t, f, gov, sub, Request{Yes: true})
	var unknown *UnknownOutcomeError
	if err == nil || errors.As(err, &unknown) || gov.lists != 1 {
		t.Fatalf("err %v, lists %d", err, gov.lists)
	}
}

func TestOutcomeUnknown(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errLostConnection, true},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{fmt.Errorf("x: %w", context.Canceled), true},
		{&net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{fmt.Errorf("x: %w", &agent.HTTPError{StatusCode: 503}), true},
		{fmt.Errorf("x: %w", &agent.HTTPError{StatusCode: 500}), true},
		{fmt.Errorf("x: %w", agent.ErrMalformedResponse), true},
		{fmt.Errorf("x: %w", &agent.HTTPError{StatusCode: 400}), false},
		{fmt.Errorf("x: %w", &agent.HTTPError{StatusCode: 429}), false},
		{fmt.Errorf("x: %w", &agent.RejectError{Code: agent.CanisterError}), false},
		{fmt.Errorf("x: %w", agent.ErrExpired), false},
		{&nns.GovernanceError{ErrorType: nns.ErrorTypeNotAuthorized}, false},
	} {
		if got := OutcomeUnknown(c.err); got != c.want {
			t.Errorf("OutcomeUnknown(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type submitterFunc func() (uint64, error)

func (f submitterFunc) Submit(context.Context, *proposal.Proposal, uint64) (uint64, error) {
	return f()
}
