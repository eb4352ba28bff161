package nns

import (
	"fmt"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

// Go types for the governance canister methods alp calls, as
// rs/nns/governance/canister/governance.did declares them (same Candid
// mapping as registry_did.go). Only the variant cases alp uses are present: a
// Candid variant decodes into a Go struct lacking other cases only when one of
// the present cases is set, which is all alp ever sends or reads back.

// NeuronID is governance's NeuronId record.
type NeuronID struct {
	ID uint64 `candid:"id"`
}

// ProposalID is governance's ProposalId record.
type ProposalID struct {
	ID uint64 `candid:"id"`
}

// NeuronIDOrSubaccount is the NeuronIdOrSubaccount variant.
type NeuronIDOrSubaccount struct {
	candid.OneOf
	Subaccount *[]byte   `candid:"Subaccount"`
	NeuronID   *NeuronID `candid:"NeuronId"`
}

// ExecuteNnsFunction is the action that hands Payload (Candid bytes) to the
// method NnsFunction names.
type ExecuteNnsFunction struct {
	NnsFunction int32  `candid:"nns_function"`
	Payload     []byte `candid:"payload"`
}

// AccountIdentifier is governance's AccountIdentifier record.
type AccountIdentifier struct {
	Hash []byte `candid:"hash"`
}

// NodeProvider is governance's NodeProvider record.
type NodeProvider struct {
	ID            *principal.Principal `candid:"id"`
	RewardAccount *AccountIdentifier   `candid:"reward_account"`
}

// Change is the AddOrRemoveNodeProvider change variant.
type Change struct {
	candid.OneOf
	ToRemove *NodeProvider `candid:"ToRemove"`
	ToAdd    *NodeProvider `candid:"ToAdd"`
}

// AddOrRemoveNodeProvider is the native governance action that adds or
// removes a node provider.
type AddOrRemoveNodeProvider struct {
	Change *Change `candid:"change"`
}

// Motion is a text-only proposal.
type Motion struct {
	MotionText string `candid:"motion_text"`
}

// ProposalActionRequest is the action variant of MakeProposalRequest, with
// the cases alp uses.
type ProposalActionRequest struct {
	candid.OneOf
	ExecuteNnsFunction      *ExecuteNnsFunction      `candid:"ExecuteNnsFunction"`
	AddOrRemoveNodeProvider *AddOrRemoveNodeProvider `candid:"AddOrRemoveNodeProvider"`
	Motion                  *Motion                  `candid:"Motion"`
}

// Action is the action variant of a stored Proposal (same cases as
// ProposalActionRequest for what alp uses).
type Action = ProposalActionRequest

// MakeProposalRequest is the MakeProposal command of manage_neuron.
type MakeProposalRequest struct {
	URL     string                 `candid:"url"`
	Title   *string                `candid:"title"`
	Action  *ProposalActionRequest `candid:"action"`
	Summary string                 `candid:"summary"`
}

// Proposal is a proposal as governance stores and returns it.
type Proposal struct {
	URL     string  `candid:"url"`
	Title   *string `candid:"title"`
	Action  *Action `candid:"action"`
	Summary string  `candid:"summary"`
}

// ManageNeuronCommandRequest is the command variant of manage_neuron with the
// case alp uses.
type ManageNeuronCommandRequest struct {
	candid.OneOf
	MakeProposal *MakeProposalRequest `candid:"MakeProposal"`
}

// ManageNeuronRequest is manage_neuron's argument.
type ManageNeuronRequest struct {
	NeuronIDOrSubaccount *NeuronIDOrSubaccount       `candid:"neuron_id_or_subaccount"`
	Command              *ManageNeuronCommandRequest `candid:"command"`
	ID                   *NeuronID                   `candid:"id"`
}

// GovernanceError is governance's error record; ErrorType is its ErrorType
// enum.
type GovernanceError struct {
	ErrorMessage string `candid:"error_message"`
	ErrorType    int32  `candid:"error_type"`
}

func (e *GovernanceError) Error() string {
	return "governance error " + errorTypeName(e.ErrorType) + ": " + e.ErrorMessage
}

// Governance ErrorType values (GovernanceError.ErrorType in governance.proto;
// numbers in docs/decisions.md).
const (
	ErrorTypeUnspecified           int32 = 0
	ErrorTypeOk                    int32 = 1
	ErrorTypeUnavailable           int32 = 2
	ErrorTypeNotAuthorized         int32 = 3
	ErrorTypeNotFound              int32 = 4
	ErrorTypeInvalidCommand        int32 = 5
	ErrorTypeRequiresNotDissolving int32 = 6
	ErrorTypeRequiresDissolving    int32 = 7
	ErrorTypeRequiresDissolved     int32 = 8
	ErrorTypeHotKey                int32 = 9
	ErrorTypeResourceExhausted     int32 = 10
	ErrorTypePreconditionFailed    int32 = 11
	ErrorTypeExternal              int32 = 12
	ErrorTypeLedgerUpdateOngoing   int32 = 13
	ErrorTypeInsufficientFunds     int32 = 14
	ErrorTypeInvalidPrincipal      int32 = 15
	ErrorTypeInvalidProposal       int32 = 16
	// The neuron joined the Neurons' (community) fund while a member, left
	// it while not one, or voted twice.
	ErrorTypeAlreadyJoinedCommunityFund int32 = 17
	ErrorTypeNotInTheCommunityFund      int32 = 18
	ErrorTypeNeuronAlreadyVoted         int32 = 19
)

var errorTypeNames = [...]string{
	ErrorTypeUnspecified:                "Unspecified",
	ErrorTypeOk:                         "Ok",
	ErrorTypeUnavailable:                "Unavailable",
	ErrorTypeNotAuthorized:              "NotAuthorized",
	ErrorTypeNotFound:                   "NotFound",
	ErrorTypeInvalidCommand:             "InvalidCommand",
	ErrorTypeRequiresNotDissolving:      "RequiresNotDissolving",
	ErrorTypeRequiresDissolving:         "RequiresDissolving",
	ErrorTypeRequiresDissolved:          "RequiresDissolved",
	ErrorTypeHotKey:                     "HotKey",
	ErrorTypeResourceExhausted:          "ResourceExhausted",
	ErrorTypePreconditionFailed:         "PreconditionFailed",
	ErrorTypeExternal:                   "External",
	ErrorTypeLedgerUpdateOngoing:        "LedgerUpdateOngoing",
	ErrorTypeInsufficientFunds:          "InsufficientFunds",
	ErrorTypeInvalidPrincipal:           "InvalidPrincipal",
	ErrorTypeInvalidProposal:            "InvalidProposal",
	ErrorTypeAlreadyJoinedCommunityFund: "AlreadyJoinedCommunityFund",
	ErrorTypeNotInTheCommunityFund:      "NotInTheCommunityFund",
	ErrorTypeNeuronAlreadyVoted:         "NeuronAlreadyVoted",
}

func errorTypeName(t int32) string {
	if t >= 0 && int(t) < len(errorTypeNames) {
		return errorTypeNames[t]
	}
	return fmt.Sprintf("ErrorType(%d)", t)
}

// MakeProposalResponse is the MakeProposal case of manage_neuron's reply.
type MakeProposalResponse struct {
	Message    *string     `candid:"message"`
	ProposalID *ProposalID `candid:"proposal_id"`
}

// ManageNeuronCommandResponse is the command variant of manage_neuron's reply
// (Command_1 in governance.did) with the cases alp reads.
type ManageNeuronCommandResponse struct {
	candid.OneOf
	Error        *GovernanceError      `candid:"Error"`
	MakeProposal *MakeProposalResponse `candid:"MakeProposal"`
}

// ManageNeuronResponse is manage_neuron's reply.
type ManageNeuronResponse struct {
	Command *ManageNeuronCommandResponse `candid:"command"`
}

// Tally is a proposal's vote count.
type Tally struct {
	No               uint64 `candid:"no"`
	Yes              uint64 `candid:"yes"`
	Total            uint64 `candid:"total"`
	TimestampSeconds uint64 `candid:"timestamp_seconds"`
}

// Ballot is one neuron's ballot on a proposal.
type Ballot struct {
	Vote        int32  `candid:"vote"`
	VotingPower uint64 `candid:"voting_power"`
}

// NeuronBallot is one `record { nat64; Ballot }` entry of ballots.
type NeuronBallot struct {
	NeuronID uint64 `candid:"0"`
	Ballot   Ballot `candid:"1"`
}

// ProposalInfo is get_proposal_info's and list_proposals' view of a proposal.
type ProposalInfo struct {
	ID                        *ProposalID      `candid:"id"`
	Status                    int32            `candid:"status"`
	Topic                     int32            `candid:"topic"`
	FailureReason             *GovernanceError `candid:"failure_reason"`
	Ballots                   []NeuronBallot   `candid:"ballots"`
	ProposalTimestampSeconds  uint64           `candid:"proposal_timestamp_seconds"`
	RewardEventRound          uint64           `candid:"reward_event_round"`
	DeadlineTimestampSeconds  *uint64          `candid:"deadline_timestamp_seconds"`
	FailedTimestampSeconds    uint64           `candid:"failed_timestamp_seconds"`
	RejectCostE8s             uint64           `candid:"reject_cost_e8s"`
	LatestTally               *Tally           `candid:"latest_tally"`
	RewardStatus              int32            `candid:"reward_status"`
	DecidedTimestampSeconds   uint64           `candid:"decided_timestamp_seconds"`
	Proposal                  *Proposal        `candid:"proposal"`
	Proposer                  *NeuronID        `candid:"proposer"`
	ExecutedTimestampSeconds  uint64           `candid:"executed_timestamp_seconds"`
	TotalPotentialVotingPower *uint64          `candid:"total_potential_voting_power"`
}

// DissolveState is the neuron dissolve-state variant.
type DissolveState struct {
	candid.OneOf
	DissolveDelaySeconds          *uint64 `candid:"DissolveDelaySeconds"`
	WhenDissolvedTimestampSeconds *uint64 `candid:"WhenDissolvedTimestampSeconds"`
}

// Neuron is get_full_neuron's Ok value, with the fields alp reads plus the
// non-opt fields the record always carries.
type Neuron struct {
	ID                         *NeuronID             `candid:"id"`
	Controller                 *principal.Principal  `candid:"controller"`
	KycVerified                bool                  `candid:"kyc_verified"`
	NotForProfit               bool                  `candid:"not_for_profit"`
	MaturityE8sEquivalent      uint64                `candid:"maturity_e8s_equivalent"`
	CachedNeuronStakeE8s       uint64                `candid:"cached_neuron_stake_e8s"`
	CreatedTimestampSeconds    uint64                `candid:"created_timestamp_seconds"`
	AgingSinceTimestampSeconds uint64                `candid:"aging_since_timestamp_seconds"`
	HotKeys                    []principal.Principal `candid:"hot_keys"`
	Account                    []byte                `candid:"account"`
	DissolveState              *DissolveState        `candid:"dissolve_state"`
	NeuronFeesE8s              uint64                `candid:"neuron_fees_e8s"`
}

// GetFullNeuronResponse is get_full_neuron's result variant.
type GetFullNeuronResponse struct {
	candid.OneOf
	Ok  *Neuron          `candid:"Ok"`
	Err *GovernanceError `candid:"Err"`
}

// ListNodeProvidersResponse is list_node_providers' reply.
type ListNodeProvidersResponse struct {
	NodeProviders []NodeProvider `candid:"node_providers"`
}

// ListProposalInfo is list_proposals' argument.
type ListProposalInfo struct {
	IncludeRewardStatus             []int32     `candid:"include_reward_status"`
	OmitLargeFields                 *bool       `candid:"omit_large_fields"`
	BeforeProposal                  *ProposalID `candid:"before_proposal"`
	Limit                           uint32      `candid:"limit"`
	ExcludeTopic                    []int32     `candid:"exclude_topic"`
	IncludeAllManageNeuronProposals *bool       `candid:"include_all_manage_neuron_proposals"`
	IncludeStatus                   []int32     `candid:"include_status"`
}

// ListProposalInfoResponse is list_proposals' reply.
type ListProposalInfoResponse struct {
	ProposalInfo []ProposalInfo `candid:"proposal_info"`
}
