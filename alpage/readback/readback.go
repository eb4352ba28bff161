// Package readback reads a submitted proposal back from the NNS for `alp
// status` and `alp import`: from governance (get_proposal_info), the
// authority, and when governance no longer has it — governance purges
// decided proposals after a while — from the public ICP dashboard, which
// keeps them, labelled as such in the output. A proposal neither knows is
// unknown, which is not an error: it may simply be too new or too old.
package readback

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"alpnib.dev/alpage/source"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
)

// Governance reads a proposal; nil when governance does not have it.
// nns.GovernanceClient satisfies it.
type Governance interface {
	GetProposalInfo(ctx context.Context, id uint64) (*nns.ProposalInfo, error)
}

// Dashboard reads a proposal from the ICP dashboard; found is false on a
// 404. *source.Dashboard satisfies it.
type Dashboard interface {
	Proposal(ctx context.Context, id uint64) (*source.Proposal, bool, error)
}

// Source says where an observation came from.
type Source string

// The sources.
const (
	FromGovernance Source = "governance"
	FromDashboard  Source = "dashboard"
	FromNowhere    Source = "none"
)

// DashboardLabel marks a line whose facts came from the dashboard.
const DashboardLabel = "[via ICP dashboard; purged from governance]"

// Unknown is the status word of a proposal neither source knows.
const Unknown = "unknown"

// Tally is a proposal's latest vote count (voting power, e8s).
type Tally struct {
	Yes   uint64 `json:"yes"`
	No    uint64 `json:"no"`
	Total uint64 `json:"total"`
}

// String renders the tally as shares of the total voting power.
func (t Tally) String() string {
	if t.Total == 0 {
		return "-"
	}
	pct := func(v uint64) string { return strconv.FormatFloat(float64(v)*100/float64(t.Total), 'f', 2, 64) + "%" }
	return "yes " + pct(t.Yes) + " no " + pct(t.No)
}

// Observation is what one read found.
type Observation struct {
	ProposalID uint64
	Source     Source
	// Status is empty when the status is not one state.json records
	// (unknown, or unspecified).
	Status        state.Status
	Tally         *Tally
	FailureReason string
	Proposer      uint64
	SubmittedAt   time.Time
	ResolvedAt    *time.Time
	// Action is the on-chain action (governance only), for import to
	// compare payloads.
	Action *nns.Action
	// DashboardAction and DashboardFunction are the action type and NNS
	// function the dashboard names (dashboard only): enough to compare the
	// kind, not the payload.
	DashboardAction, DashboardFunction string
}

// Word is the status as shown: the recorded status word, or unknown.
func (o Observation) Word() string {
	if o.Status == "" {
		return Unknown
	}
	return string(o.Status)
}

// StatusOf maps governance's status to the recorded one ("" for
// unspecified).
func StatusOf(s nns.ProposalStatus) state.Status {
	switch s {
	case nns.StatusOpen:
		return state.StatusOpen
	case nns.StatusAdopted:
		return state.StatusAdopted
	case nns.StatusExecuted:
		return state.StatusExecuted
	case nns.StatusRejected:
		return state.StatusRejected
	case nns.StatusFailed:
		return state.StatusFailed
	}
	return ""
}

// statusOfWord maps the dashboard's status word (OPEN, EXECUTED, ...).
func statusOfWord(w string) state.Status {
	s := state.Status(strings.ToLower(strings.TrimPrefix(strings.ToUpper(w), "PROPOSAL_STATUS_")))
	if s != "" && s.Valid() {
		return s
	}
	return ""
}

// Read reads proposal id from governance, else the dashboard. dash may be
// nil (no fallback). An error is a failure to ask, not an absence.
func Read(ctx context.Context, gov Governance, dash Dashboard, id uint64) (Observation, error) {
	info, err := gov.GetProposalInfo(ctx, id)
	if err != nil {
		return Observation{}, fmt.Errorf("proposal %d: %w", id, err)
	}
	if info != nil {
		return fromGovernance(id, info), nil
	}
	if dash == nil {
		return Observation{ProposalID: id, Source: FromNowhere}, nil
	}
	p, found, err := dash.Proposal(ctx, id)
	if err != nil {
		return Observation{}, fmt.Errorf("proposal %d: governance does not have it, and %w", id, err)
	}
	if !found {
		return Observation{ProposalID: id, Source: FromNowhere}, nil
	}
	return fromDashboard(id, p), nil
}

func fromGovernance(id uint64, info *nns.ProposalInfo) Observation {
	o := Observation{ProposalID: id, Source: FromGovernance, Status: StatusOf(nns.ProposalStatus(info.Status))}
	if t := info.LatestTally; t != nil {
		o.Tally = &Tally{Yes: t.Yes, No: t.No, Total: t.Total}
	}
	if f := info.FailureReason; f != nil {
		o.FailureReason = f.ErrorMessage
	}
	if info.Proposer != nil {
		o.Proposer = info.Proposer.ID
	}
	if info.ProposalTimestampSeconds != 0 {
		o.SubmittedAt = time.Unix(int64(info.ProposalTimestampSeconds), 0).UTC()
	}
	if info.Proposal != nil {
		o.Action = info.Proposal.Action
	}
	o.ResolvedAt = resolvedAt(o.Status, info.ExecutedTimestampSeconds, info.FailedTimestampSeconds, info.DecidedTimestampSeconds)
	return o
}

func fromDashboard(id uint64, p *source.Proposal) Observation {
	o := Observation{ProposalID: id, Source: FromDashboard, Status: statusOfWord(p.Status), Proposer: uint64(p.Proposer),
		DashboardAction: p.Action, DashboardFunction: p.ActionNnsFunction}
	if t := p.LatestTally; t != nil {
		o.Tally = &Tally{Yes: uint64(t.Yes), No: uint64(t.No), Total: uint64(t.Total)}
	}
	if f := p.FailureReason; f != nil {
		o.FailureReason = f.ErrorMessage
	}
	if p.ProposalTimestampSeconds != 0 {
		o.SubmittedAt = time.Unix(int64(p.ProposalTimestampSeconds), 0).UTC()
	}
	o.ResolvedAt = resolvedAt(o.Status, uint64(p.ExecutedTimestampSeconds), uint64(p.FailedTimestampSeconds), uint64(p.DecidedTimestampSeconds))
	return o
}

// resolvedAt is the executed, failed or decided time of a terminal status.
func resolvedAt(s state.Status, executed, failed, decided uint64) *time.Time {
	var secs uint64
	switch s {
	case state.StatusExecuted:
		secs = executed
	case state.StatusFailed:
		secs = failed
	case state.StatusRejected:
		secs = decided
	}
	if secs == 0 && s.Terminal() {
		secs = decided
	}
	if secs == 0 {
		return nil
	}
	t := time.Unix(int64(secs), 0).UTC()
	return &t
}

// ReadAll reads ids concurrently (at most parallel at once) and returns
// the observations and errors in the order of ids.
func ReadAll(ctx context.Context, gov Governance, dash Dashboard, ids []uint64, parallel int) ([]Observation, []error) {
	obs := make([]Observation, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			obs[i], errs[i] = Read(ctx, gov, dash, id)
		}()
	}
	wg.Wait()
	return obs, errs
}

// PayloadSHA256 is the sha256 of the payload an on-chain action carries,
// computed the way state.json pins it: the ExecuteNnsFunction payload
// bytes, or the Candid encoding of an AddOrRemoveNodeProvider action. ok
// is false for an action without a payload alp knows.
func PayloadSHA256(a *nns.Action) (sum string, fn nns.NnsFunction, ok bool) {
	var payload []byte
	switch {
	case a == nil:
		return "", 0, false
	case a.ExecuteNnsFunction != nil:
		payload, fn = a.ExecuteNnsFunction.Payload, nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction)
	case a.AddOrRemoveNodeProvider != nil:
		b, err := candid.Marshal(*a.AddOrRemoveNodeProvider)
		if err != nil {
			return "", 0, false
		}
		payload = b
	default:
		return "", 0, false
	}
	h := sha256.Sum256(payload)
	return hex.EncodeToString(h[:]), fn, true
}
