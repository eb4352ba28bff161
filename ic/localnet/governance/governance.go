// Package governance is the NNS governance canister of the local network, as
// pure Go: neurons with controllers and hotkeys, proposals made through
// manage_neuron's MakeProposal, their status, tally and timestamps, and
// execution of adopted proposals against the registry.
//
// Voting is simplified to what a local network needs: with no voting period
// every proposal is adopted the moment it is made (all neurons follow the
// proposer), which is what tests and the dry run want; with a voting period
// the proposer's neuron votes yes, the others abstain, and the proposal is
// decided when the period ends, by the real rule (more yes than no, and at
// least 3% of the total voting power in favour).
//
// A failed execution is recorded as PROPOSAL_STATUS_FAILED with the
// executor's error as failure_reason, as governance does, so a dry run
// reads back exactly what mainnet would have said.
package governance

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Executor runs an adopted ExecuteNnsFunction proposal: in the local network,
// it decodes the Candid payload and calls the registry method the function
// names. An error is the proposal's failure reason.
type Executor interface {
	ExecuteNnsFunction(fn nns.NnsFunction, payload []byte) error
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(fn nns.NnsFunction, payload []byte) error

// ExecuteNnsFunction calls f.
func (f ExecutorFunc) ExecuteNnsFunction(fn nns.NnsFunction, payload []byte) error {
	return f(fn, payload)
}

// Config tunes a Governance.
type Config struct {
	// VotingPeriod is how long a proposal stays open; zero adopts and
	// executes each proposal immediately.
	VotingPeriod time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Neuron is a neuron to seed.
type Neuron struct {
	ID         uint64
	Controller principal.Principal
	HotKeys    []principal.Principal
	// StakeE8s is the neuron's stake, which is also its voting power here.
	StakeE8s             uint64
	DissolveDelaySeconds uint64
}

// Governance is the local governance canister. Safe for concurrent use.
type Governance struct {
	mu        sync.Mutex
	cfg       Config
	exec      Executor
	neurons   map[uint64]*Neuron
	providers []principal.Principal
	proposals map[uint64]*nns.ProposalInfo
	lastID    uint64
}

// New returns an empty governance executing proposals with exec.
func New(cfg Config, exec Executor) *Governance {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Governance{cfg: cfg, exec: exec, neurons: map[uint64]*Neuron{}, proposals: map[uint64]*nns.ProposalInfo{}}
}

// AddNeuron seeds a neuron (replacing one with the same id).
func (g *Governance) AddNeuron(n Neuron) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := n
	c.HotKeys = slices.Clone(n.HotKeys)
	g.neurons[n.ID] = &c
}

// AddNodeProvider seeds a node provider governance knows.
func (g *Governance) AddNodeProvider(id principal.Principal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Contains(g.providers, id) {
		g.providers = append(g.providers, id)
	}
}

// SeedProposal records an already decided proposal (for example the
// election of a version the fleet file says is elected) so that governance
// and the dashboard can report it. Its id is assigned and returned; status,
// topic and timestamps are taken from info.
func (g *Governance) SeedProposal(info nns.ProposalInfo) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastID++
	c := info
	c.ID = &nns.ProposalID{ID: g.lastID}
	g.proposals[g.lastID] = &c
	return g.lastID
}

// SkipIDs makes the next proposal id at least next. A network whose older
// proposals governance has purged keeps counting from where they left off.
func (g *Governance) SkipIDs(next uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if next > 0 && g.lastID < next-1 {
		g.lastID = next - 1
	}
}

func govErr(t int32, format string, args ...any) *nns.GovernanceError {
	return &nns.GovernanceError{ErrorType: t, ErrorMessage: fmt.Sprintf(format, args...)}
}

// authorized reports whether caller controls the neuron or is one of its
// hotkeys: both may make proposals and read the full neuron.
func (n *Neuron) authorized(caller principal.Principal) bool {
	return caller == n.Controller || slices.Contains(n.HotKeys, caller)
}

// ManageNeuron handles manage_neuron for caller. Only MakeProposal is
// supported; anything else is answered with an InvalidCommand error, in the
// reply as governance does, not as a reject.
func (g *Governance) ManageNeuron(caller principal.Principal, req nns.ManageNeuronRequest) nns.ManageNeuronResponse {
	fail := func(e *nns.GovernanceError) nns.ManageNeuronResponse {
		return nns.ManageNeuronResponse{Command: &nns.ManageNeuronCommandResponse{Error: e}}
	}
	var neuronID uint64
	switch {
	case req.NeuronIDOrSubaccount != nil && req.NeuronIDOrSubaccount.NeuronID != nil:
		neuronID = req.NeuronIDOrSubaccount.NeuronID.ID
	case req.ID != nil:
		neuronID = req.ID.ID
	default:
		return fail(govErr(nns.ErrorTypeInvalidCommand, "no neuron id given (subaccounts are not supported by the local network)"))
	}
	if req.Command == nil || req.Command.MakeProposal == nil {
		return fail(govErr(nns.ErrorTypeInvalidCommand, "only the MakeProposal command is supported by the local network"))
	}
	id, err := g.MakeProposal(caller, neuronID, *req.Command.MakeProposal)
	if err != nil {
		return fail(err)
	}
	return nns.ManageNeuronResponse{Command: &nns.ManageNeuronCommandResponse{
		MakeProposal: &nns.MakeProposalResponse{ProposalID: &nns.ProposalID{ID: id}},
	}}
}

// MakeProposal files a proposal from neuronID on behalf of caller and
// returns its id. Without a voting period it is adopted and executed before
// this returns.
func (g *Governance) MakeProposal(caller principal.Principal, neuronID uint64, req nns.MakeProposalRequest) (uint64, *nns.GovernanceError) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.neurons[neuronID]
	if !ok {
		return 0, govErr(nns.ErrorTypeNotFound, "neuron not found: %d", neuronID)
	}
	if !n.authorized(caller) {
		return 0, govErr(nns.ErrorTypeNotAuthorized, "caller %s is neither the controller nor a hotkey of neuron %d", caller, neuronID)
	}
	topic, perr := topicOf(req.Action)
	if perr != nil {
		return 0, perr
	}
	if perr := g.validatePayloadLocked(req.Action); perr != nil {
		return 0, perr
	}
	if req.Title == nil {
		return 0, govErr(nns.ErrorTypeInvalidProposal, "Proposal lacks a title")
	}
	for _, err := range []error{nns.CheckProposalTitle(*req.Title), nns.CheckProposalSummary(req.Summary), nns.CheckProposalURL(req.URL)} {
		if err != nil {
			return 0, govErr(nns.ErrorTypeInvalidProposal, "%v", err)
		}
	}
	now := uint64(g.cfg.Now().Unix())
	var total uint64
	for _, x := range g.neurons {
		total += x.StakeE8s
	}
	g.lastID++
	id := g.lastID
	deadline := now + uint64(g.cfg.VotingPeriod/time.Second)
	info := &nns.ProposalInfo{
		ID:                        &nns.ProposalID{ID: id},
		Status:                    int32(nns.StatusOpen),
		Topic:                     int32(topic),
		Ballots:                   []nns.NeuronBallot{{NeuronID: neuronID, Ballot: nns.Ballot{Vote: int32(nns.VoteYes), VotingPower: n.StakeE8s}}},
		ProposalTimestampSeconds:  now,
		DeadlineTimestampSeconds:  &deadline,
		LatestTally:               &nns.Tally{Yes: n.StakeE8s, Total: total, TimestampSeconds: now},
		RewardStatus:              int32(nns.RewardStatusAcceptVotes),
		Proposal:                  &nns.Proposal{URL: req.URL, Title: req.Title, Action: req.Action, Summary: req.Summary},
		Proposer:                  &nns.NeuronID{ID: neuronID},
		TotalPotentialVotingPower: &total,
	}
	g.proposals[id] = info
	if g.cfg.VotingPeriod == 0 {
		info.LatestTally.Yes = total // everyone follows the proposer
		g.adoptLocked(info, now)
	}
	return id, nil
}

// validatePayloadLocked refuses what governance refuses of an
// ExecuteNnsFunction's payload before it makes the proposal: an
// ASSIGN_NOID (add_node_operator) whose node provider it does not list
// (validate_assign_noid_payload, docs/decisions.md).
func (g *Governance) validatePayloadLocked(a *nns.ProposalActionRequest) *nns.GovernanceError {
	if a.ExecuteNnsFunction == nil || nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction) != nns.FunctionAssignNoid {
		return nil
	}
	var p nns.AddNodeOperatorPayload
	if err := candid.Unmarshal(a.ExecuteNnsFunction.Payload, &p); err != nil {
		return govErr(nns.ErrorTypeInvalidProposal, "failed to decode the AddNodeOperatorPayload: %v", err)
	}
	if p.NodeProviderPrincipalID == nil {
		return govErr(nns.ErrorTypeInvalidProposal, "The payload's node_provider_principal_id field was None")
	}
	if !slices.Contains(g.providers, *p.NodeProviderPrincipalID) {
		return govErr(nns.ErrorTypeInvalidProposal, "The node provider specified in the payload is not registered")
	}
	return nil
}

// topicOf validates the action and returns the topic governance files it
// under.
func topicOf(a *nns.ProposalActionRequest) (nns.Topic, *nns.GovernanceError) {
	switch {
	case a == nil:
		return 0, govErr(nns.ErrorTypeInvalidProposal, "proposal has no action")
	case a.ExecuteNnsFunction != nil:
		fn := nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction)
		if fn == nns.FunctionUnspecified {
			return 0, govErr(nns.ErrorTypeInvalidProposal, "ExecuteNnsFunction with NNS_FUNCTION_UNSPECIFIED")
		}
		return fn.Topic(), nil
	case a.AddOrRemoveNodeProvider != nil:
		// As ValidAddOrRemoveNodeProvider::try_from upstream: the change
		// first, then its node provider's id.
		c := a.AddOrRemoveNodeProvider.Change
		if c == nil || (c.ToAdd == nil && c.ToRemove == nil) {
			return 0, govErr(nns.ErrorTypeInvalidProposal, "AddOrRemoveNodeProvider proposal must have a change field")
		}
		if c.ToAdd != nil && c.ToRemove != nil {
			return 0, govErr(nns.ErrorTypeInvalidProposal, "AddOrRemoveNodeProvider proposal must have one change, ToAdd or ToRemove, not both")
		}
		np := c.ToAdd
		if np == nil {
			np = c.ToRemove
		}
		if np.ID == nil {
			return 0, govErr(nns.ErrorTypeInvalidProposal, "AddOrRemoveNodeProvider proposal must have a node provider id")
		}
		return nns.TopicParticipantManagement, nil
	case a.Motion != nil:
		return nns.TopicGovernance, nil
	}
	return 0, govErr(nns.ErrorTypeInvalidProposal, "proposal action is not supported by the local network")
}

// adoptLocked marks the proposal adopted and executes it.
func (g *Governance) adoptLocked(p *nns.ProposalInfo, now uint64) {
	p.Status = int32(nns.StatusAdopted)
	p.DecidedTimestampSeconds = now
	p.RewardStatus = int32(nns.RewardStatusReadyToSettle)
	if err := g.executeLocked(p.Proposal.Action); err != nil {
		p.Status = int32(nns.StatusFailed)
		p.FailedTimestampSeconds = now
		p.FailureReason = err
		return
	}
	p.Status = int32(nns.StatusExecuted)
	p.ExecutedTimestampSeconds = now
}

// rejectCanisterError is the interface spec's CANISTER_ERROR reject code,
// what a call to a canister that traps is rejected with.
const rejectCanisterError = 5

func (g *Governance) executeLocked(a *nns.Action) *nns.GovernanceError {
	switch {
	case a.ExecuteNnsFunction != nil:
		fn := nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction)
		if g.exec == nil {
			return govErr(nns.ErrorTypeExternal, "no executor for %s", fn)
		}
		if err := g.exec.ExecuteNnsFunction(fn, a.ExecuteNnsFunction.Payload); err != nil {
			// The registry refuses by trapping: reject code 5
			// (CANISTER_ERROR), which governance's newest text names.
			return govErr(nns.ErrorTypeExternal, "Error executing ExecuteNnsFunction proposal. Error Code: %d. Rejection message: %v", rejectCanisterError, err)
		}
		return nil
	case a.AddOrRemoveNodeProvider != nil:
		c := a.AddOrRemoveNodeProvider.Change
		if c.ToRemove != nil {
			id := *c.ToRemove.ID
			i := slices.Index(g.providers, id)
			if i < 0 {
				return govErr(nns.ErrorTypeNotFound, "Can't find a NodeProvider with the same principal id. (%s)", id)
			}
			g.providers = slices.Delete(g.providers, i, i+1)
			return nil
		}
		id := *c.ToAdd.ID
		if slices.Contains(g.providers, id) {
			return govErr(nns.ErrorTypePreconditionFailed, "A node provider with the same principal already exists: %s", id)
		}
		g.providers = append(g.providers, id)
		return nil
	}
	return nil // a motion executes by being adopted
}

// Tick decides every open proposal whose voting period has ended. The local
// network calls it periodically; tests call it after moving the clock.
func (g *Governance) Tick() {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := uint64(g.cfg.Now().Unix())
	for _, id := range g.idsLocked() {
		p := g.proposals[id]
		if p.Status != int32(nns.StatusOpen) || p.DeadlineTimestampSeconds == nil || now < *p.DeadlineTimestampSeconds {
			continue
		}
		t := p.LatestTally
		if t.Yes > t.No && t.Yes*100 >= t.Total*3 {
			g.adoptLocked(p, now)
			continue
		}
		p.Status = int32(nns.StatusRejected)
		p.DecidedTimestampSeconds = now
		p.RewardStatus = int32(nns.RewardStatusReadyToSettle)
	}
}

func (g *Governance) idsLocked() []uint64 {
	ids := make([]uint64, 0, len(g.proposals))
	for id := range g.proposals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ProposalInfo answers get_proposal_info: nil for an unknown id.
func (g *Governance) ProposalInfo(id uint64) *nns.ProposalInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	p, ok := g.proposals[id]
	if !ok {
		return nil
	}
	c := *p
	return &c
}

// Proposals returns every proposal, oldest first.
func (g *Governance) Proposals() []nns.ProposalInfo {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]nns.ProposalInfo, 0, len(g.proposals))
	for _, id := range g.idsLocked() {
		out = append(out, *g.proposals[id])
	}
	return out
}

// ListProposals answers list_proposals: newest first, before
// before_proposal, filtered by status and excluded topics, at most limit
// (governance caps it at 100).
func (g *Governance) ListProposals(req nns.ListProposalInfo) nns.ListProposalInfoResponse {
	all := g.Proposals()
	limit := int(req.Limit)
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	var out []nns.ProposalInfo
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
		p := all[i]
		if req.BeforeProposal != nil && p.ID.ID >= req.BeforeProposal.ID {
			continue
		}
		if len(req.IncludeStatus) > 0 && !slices.Contains(req.IncludeStatus, p.Status) {
			continue
		}
		if slices.Contains(req.ExcludeTopic, p.Topic) {
			continue
		}
		out = append(out, p)
	}
	return nns.ListProposalInfoResponse{ProposalInfo: out}
}

// FullNeuron answers get_full_neuron for caller: only the controller or a
// hotkey may read it.
func (g *Governance) FullNeuron(caller principal.Principal, id uint64) nns.GetFullNeuronResponse {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.neurons[id]
	if !ok {
		return nns.GetFullNeuronResponse{Err: govErr(nns.ErrorTypeNotFound, "neuron not found: %d", id)}
	}
	if !n.authorized(caller) {
		return nns.GetFullNeuronResponse{Err: govErr(nns.ErrorTypeNotAuthorized, "caller %s is not authorized to read neuron %d", caller, id)}
	}
	ctrl := n.Controller
	delay := n.DissolveDelaySeconds
	return nns.GetFullNeuronResponse{Ok: &nns.Neuron{
		ID:                   &nns.NeuronID{ID: n.ID},
		Controller:           &ctrl,
		HotKeys:              slices.Clone(n.HotKeys),
		CachedNeuronStakeE8s: n.StakeE8s,
		Account:              make([]byte, 32),
		DissolveState:        &nns.DissolveState{DissolveDelaySeconds: &delay},
	}}
}

// ListNodeProviders answers list_node_providers.
func (g *Governance) ListNodeProviders() nns.ListNodeProvidersResponse {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := nns.ListNodeProvidersResponse{NodeProviders: []nns.NodeProvider{}}
	for _, p := range g.providers {
		id := p
		out.NodeProviders = append(out.NodeProviders, nns.NodeProvider{ID: &id})
	}
	return out
}
