package candid

import (
	"os"
	"testing"

	"alpnib.dev/ic/principal"
)

// Go types for the governance ProposalInfo shape of the shared benchmark
// workload (shared/bench/candid/README.md).

type neuronID struct {
	ID uint64 `candid:"id"`
}

type proposalID struct {
	ID uint64 `candid:"id"`
}

type governanceError struct {
	ErrorMessage string `candid:"error_message"`
	ErrorType    int32  `candid:"error_type"`
}

type ballot struct {
	Vote        int32  `candid:"vote"`
	VotingPower uint64 `candid:"voting_power"`
}

// ballotEntry is the README's `record {nat64; record {...}}`. The encoder
// that produced the workload hashed the tuple positions as the names "0"
// and "1" (ids 48 and 49) instead of numbering them 0 and 1, so the tags
// give those ids.
type ballotEntry struct {
	Neuron uint64 `candid:"48"`
	Ballot ballot `candid:"49"`
}

type tally struct {
	No               uint64 `candid:"no"`
	Yes              uint64 `candid:"yes"`
	Total            uint64 `candid:"total"`
	TimestampSeconds uint64 `candid:"timestamp_seconds"`
}

type executeNnsFunction struct {
	NnsFunction int32  `candid:"nns_function"`
	Payload     []byte `candid:"payload"`
}

type action struct {
	OneOf
	ExecuteNnsFunction *executeNnsFunction `candid:"ExecuteNnsFunction"`
}

type proposal struct {
	URL     string  `candid:"url"`
	Title   *string `candid:"title"`
	Action  *action `candid:"action"`
	Summary string  `candid:"summary"`
}

type proposalInfo struct {
	ID                       *proposalID      `candid:"id"`
	Status                   int32            `candid:"status"`
	Topic                    int32            `candid:"topic"`
	FailureReason            *governanceError `candid:"failure_reason"`
	Ballots                  []ballotEntry    `candid:"ballots"`
	ProposalTimestampSeconds uint64           `candid:"proposal_timestamp_seconds"`
	RewardEventRound         uint64           `candid:"reward_event_round"`
	DeadlineTimestampSeconds *uint64          `candid:"deadline_timestamp_seconds"`
	FailedTimestampSeconds   uint64           `candid:"failed_timestamp_seconds"`
	RejectCostE8s            uint64           `candid:"reject_cost_e8s"`
	LatestTally              *tally           `candid:"latest_tally"`
	RewardStatus             int32            `candid:"reward_status"`
	DecidedTimestampSeconds  uint64           `candid:"decided_timestamp_seconds"`
	Proposal                 *proposal        `candid:"proposal"`
	Proposer                 *neuronID        `candid:"proposer"`
	ExecutedTimestampSeconds uint64           `candid:"executed_timestamp_seconds"`
}

func workload(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return unhex(t, string(b))
}

var _ = principal.Principal{}
