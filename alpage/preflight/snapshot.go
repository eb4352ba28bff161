package preflight

import "alpnib.dev/ic/nns"

// Snapshot is the live state one proposal's preflight reads, already
// fetched. Fields a kind does not need stay zero.
type Snapshot struct {
	// RegistryVersion is the registry's latest version when reading began.
	RegistryVersion uint64
	// Subnet is the record of the subnet the proposal targets (membership,
	// deploy_guestos, update_subnet); nil when the registry has none.
	Subnet *nns.SubnetRecord
	// SubnetPB is the same record as the registry stores it (update_subnet
	// reads it: the payload inherits from it, and it shows the fields alp
	// does not model); nil when not read or absent.
	SubnetPB *nns.SubnetRecordPB
	// Nodes holds what is known of each node the proposal names.
	Nodes map[string]NodeFacts
	// Version describes deploy_guestos's target version.
	Version VersionFacts
	// Operators holds each operator remove_node_operators names.
	Operators map[string]OperatorFacts
	// Provider describes remove_node_provider's provider.
	Provider ProviderFacts
}

// NodeFacts is what the registry says of a node. Err is set (and the rest
// is unknown) when it could not be read.
type NodeFacts struct {
	Registered bool   `json:"registered"`
	MemberOf   string `json:"member_of,omitempty"` // subnet id, "" for none
	// HasChip: the node record carries a chip_id (a SEV-capable node).
	HasChip bool `json:"has_chip,omitempty"`
	// RewardType is the record's node_reward_type; nil when absent.
	RewardType *int32 `json:"node_reward_type,omitempty"`
	Err        string `json:"error,omitempty"`
}

// VersionFacts is what is known of a replica version: whether it is elected
// (replica_version_<id> present) and the release name and election
// proposal the dashboard gives it (display only).
type VersionFacts struct {
	Elected bool
	// ElectedSource is ExplorerLabel when the answer came from the explorer
	// rather than the registry canister.
	ElectedSource string
	ElectedErr    string
	Release       string
	ProposalID    uint64
	ReleaseErr    string
}

// OperatorFacts is what is known of a node operator.
type OperatorFacts struct {
	Registered    bool
	RegisteredErr string
	// Nodes are the ids of the nodes it owns: from the node records of the
	// certified registry copy when the fetcher reads one (NodesSource ""),
	// else per the registry explorer (NodesSource source.ExplorerLabel).
	Nodes       []string
	NodesErr    string
	NodesSource string
}

// ProviderFacts is what is known of a node provider.
type ProviderFacts struct {
	// Known is whether governance lists it (list_node_providers).
	Known bool
	// Operators are the operators the registry has under it.
	Operators []string
}
