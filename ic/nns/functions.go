// Package nns holds Go types for the NNS registry and governance canisters,
// matching their public Candid interfaces (registry.did and governance.did in
// dfinity/ic), the registry's record protobufs, and the governance enums
// (NnsFunction, Topic, ProposalStatus) whose numbers travel on the wire.
//
// The numbers are the dangerous part: governance accepts any nns_function
// number and executes whatever registry method it maps to, so a wrong constant
// is a proposal that does the wrong thing. Every number here is pinned in a
// test against the value read from governance.proto.
package nns

import "fmt"

// NnsFunction is governance's NnsFunction enum: which registry (or other NNS
// canister) method an ExecuteNnsFunction proposal runs.
type NnsFunction int32

// The NnsFunction values alp proposes, plus the election one the dashboard
// stand-in reports. Numbers from rs/nns/governance/proto/.../governance.proto.
const (
	FunctionUnspecified                   NnsFunction = 0
	FunctionUpdateConfigOfSubnet          NnsFunction = 7
	FunctionAssignNoid                    NnsFunction = 8
	FunctionDeployGuestosToAllSubnetNodes NnsFunction = 11
	FunctionUpdateNodeOperatorConfig      NnsFunction = 16
	FunctionRemoveNodes                   NnsFunction = 18
	FunctionRemoveNodeOperators           NnsFunction = 23
	FunctionChangeSubnetMembership        NnsFunction = 31
	FunctionReviseElectedGuestosVersions  NnsFunction = 38
	FunctionDeployHostosToSomeNodes       NnsFunction = 51
)

var functionNames = map[NnsFunction]string{
	FunctionUnspecified:                   "NNS_FUNCTION_UNSPECIFIED",
	FunctionUpdateConfigOfSubnet:          "NNS_FUNCTION_UPDATE_CONFIG_OF_SUBNET",
	FunctionAssignNoid:                    "NNS_FUNCTION_ASSIGN_NOID",
	FunctionUpdateNodeOperatorConfig:      "NNS_FUNCTION_UPDATE_NODE_OPERATOR_CONFIG",
	FunctionDeployHostosToSomeNodes:       "NNS_FUNCTION_DEPLOY_HOSTOS_TO_SOME_NODES",
	FunctionDeployGuestosToAllSubnetNodes: "NNS_FUNCTION_DEPLOY_GUESTOS_TO_ALL_SUBNET_NODES",
	FunctionRemoveNodes:                   "NNS_FUNCTION_REMOVE_NODES",
	FunctionRemoveNodeOperators:           "NNS_FUNCTION_REMOVE_NODE_OPERATORS",
	FunctionChangeSubnetMembership:        "NNS_FUNCTION_CHANGE_SUBNET_MEMBERSHIP",
	FunctionReviseElectedGuestosVersions:  "NNS_FUNCTION_REVISE_ELECTED_GUESTOS_VERSIONS",
}

var functionMethods = map[NnsFunction]string{
	FunctionUpdateConfigOfSubnet:          "update_subnet",
	FunctionAssignNoid:                    "add_node_operator",
	FunctionUpdateNodeOperatorConfig:      "update_node_operator_config",
	FunctionDeployHostosToSomeNodes:       "deploy_hostos_to_some_nodes",
	FunctionDeployGuestosToAllSubnetNodes: "deploy_guestos_to_all_subnet_nodes",
	FunctionRemoveNodes:                   "remove_nodes",
	FunctionRemoveNodeOperators:           "remove_node_operators",
	FunctionChangeSubnetMembership:        "change_subnet_membership",
	FunctionReviseElectedGuestosVersions:  "revise_elected_guestos_versions",
}

var functionTopics = map[NnsFunction]Topic{
	FunctionUpdateConfigOfSubnet:          TopicSubnetManagement,
	FunctionAssignNoid:                    TopicNodeAdmin,
	FunctionUpdateNodeOperatorConfig:      TopicNodeAdmin,
	FunctionDeployHostosToSomeNodes:       TopicIcOsVersionDeployment,
	FunctionDeployGuestosToAllSubnetNodes: TopicIcOsVersionDeployment,
	FunctionRemoveNodes:                   TopicNodeAdmin,
	FunctionRemoveNodeOperators:           TopicNodeAdmin,
	FunctionChangeSubnetMembership:        TopicSubnetManagement,
	FunctionReviseElectedGuestosVersions:  TopicIcOsVersionElection,
}

// String is the proto enum name.
func (f NnsFunction) String() string {
	if n, ok := functionNames[f]; ok {
		return n
	}
	return fmt.Sprintf("NNS_FUNCTION_%d", int32(f))
}

// RegistryMethod is the registry canister method governance calls with the
// proposal's payload; ok is false for a function this package does not know.
func (f NnsFunction) RegistryMethod() (method string, ok bool) {
	m, ok := functionMethods[f]
	return m, ok
}

// Topic is the topic governance files a proposal of this function under.
func (f NnsFunction) Topic() Topic {
	if t, ok := functionTopics[f]; ok {
		return t
	}
	return TopicUnspecified
}

// Topic is governance's Topic enum.
type Topic int32

// Topic values (governance.proto Topic enum).
const (
	TopicUnspecified            Topic = 0
	TopicNeuronManagement       Topic = 1
	TopicExchangeRate           Topic = 2
	TopicNetworkEconomics       Topic = 3
	TopicGovernance             Topic = 4
	TopicNodeAdmin              Topic = 5
	TopicParticipantManagement  Topic = 6
	TopicSubnetManagement       Topic = 7
	TopicNetworkCanisterMgmt    Topic = 8
	TopicKyc                    Topic = 9
	TopicNodeProviderRewards    Topic = 10
	TopicIcOsVersionDeployment  Topic = 12
	TopicIcOsVersionElection    Topic = 13
	TopicSnsAndCommunityFund    Topic = 14
	TopicAPIBoundaryNodeMgmt    Topic = 15
	TopicSubnetRental           Topic = 16
	TopicProtocolCanisterMgmt   Topic = 17
	TopicServiceNervousSystemMg Topic = 18
)

var topicNames = map[Topic]string{
	TopicUnspecified:            "TOPIC_UNSPECIFIED",
	TopicNeuronManagement:       "TOPIC_NEURON_MANAGEMENT",
	TopicExchangeRate:           "TOPIC_EXCHANGE_RATE",
	TopicNetworkEconomics:       "TOPIC_NETWORK_ECONOMICS",
	TopicGovernance:             "TOPIC_GOVERNANCE",
	TopicNodeAdmin:              "TOPIC_NODE_ADMIN",
	TopicParticipantManagement:  "TOPIC_PARTICIPANT_MANAGEMENT",
	TopicSubnetManagement:       "TOPIC_SUBNET_MANAGEMENT",
	TopicNetworkCanisterMgmt:    "TOPIC_NETWORK_CANISTER_MANAGEMENT",
	TopicKyc:                    "TOPIC_KYC",
	TopicNodeProviderRewards:    "TOPIC_NODE_PROVIDER_REWARDS",
	TopicIcOsVersionDeployment:  "TOPIC_IC_OS_VERSION_DEPLOYMENT",
	TopicIcOsVersionElection:    "TOPIC_IC_OS_VERSION_ELECTION",
	TopicSnsAndCommunityFund:    "TOPIC_SNS_AND_COMMUNITY_FUND",
	TopicAPIBoundaryNodeMgmt:    "TOPIC_API_BOUNDARY_NODE_MANAGEMENT",
	TopicSubnetRental:           "TOPIC_SUBNET_RENTAL",
	TopicProtocolCanisterMgmt:   "TOPIC_PROTOCOL_CANISTER_MANAGEMENT",
	TopicServiceNervousSystemMg: "TOPIC_SERVICE_NERVOUS_SYSTEM_MANAGEMENT",
}

// String is the proto enum name, the form the ICP dashboard uses in its
// include_topic filter and topic field.
func (t Topic) String() string {
	if n, ok := topicNames[t]; ok {
		return n
	}
	return fmt.Sprintf("TOPIC_%d", int32(t))
}

// ParseTopic is the inverse of Topic.String.
func ParseTopic(s string) (Topic, bool) {
	for t, n := range topicNames {
		if n == s {
			return t, true
		}
	}
	return 0, false
}

// ProposalStatus is governance's ProposalStatus enum.
type ProposalStatus int32

// ProposalStatus values (governance.proto).
const (
	StatusUnspecified ProposalStatus = 0
	StatusOpen        ProposalStatus = 1
	StatusRejected    ProposalStatus = 2
	StatusAdopted     ProposalStatus = 3
	StatusExecuted    ProposalStatus = 4
	StatusFailed      ProposalStatus = 5
)

var statusNames = map[ProposalStatus]string{
	StatusUnspecified: "PROPOSAL_STATUS_UNSPECIFIED",
	StatusOpen:        "PROPOSAL_STATUS_OPEN",
	StatusRejected:    "PROPOSAL_STATUS_REJECTED",
	StatusAdopted:     "PROPOSAL_STATUS_ADOPTED",
	StatusExecuted:    "PROPOSAL_STATUS_EXECUTED",
	StatusFailed:      "PROPOSAL_STATUS_FAILED",
}

// String is the proto enum name.
func (s ProposalStatus) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("PROPOSAL_STATUS_%d", int32(s))
}

// Word is the short upper-case word the ICP dashboard uses for a status
// ("OPEN", "EXECUTED", ...).
func (s ProposalStatus) Word() string {
	switch s {
	case StatusOpen:
		return "OPEN"
	case StatusRejected:
		return "REJECTED"
	case StatusAdopted:
		return "ADOPTED"
	case StatusExecuted:
		return "EXECUTED"
	case StatusFailed:
		return "FAILED"
	}
	return "UNKNOWN"
}

// Terminal reports whether a proposal in this status can change no more.
func (s ProposalStatus) Terminal() bool {
	return s == StatusRejected || s == StatusExecuted || s == StatusFailed
}

// RewardStatus is governance's ProposalRewardStatus enum.
type RewardStatus int32

// RewardStatus values (governance.proto).
const (
	RewardStatusUnspecified   RewardStatus = 0
	RewardStatusAcceptVotes   RewardStatus = 1
	RewardStatusReadyToSettle RewardStatus = 2
	RewardStatusSettled       RewardStatus = 3
	RewardStatusIneligible    RewardStatus = 4
)

// Vote is governance's Vote enum as carried in ballots.
type Vote int32

// Vote values (governance.proto).
const (
	VoteUnspecified Vote = 0
	VoteYes         Vote = 1
	VoteNo          Vote = 2
)

// The NNS canister ids on mainnet, which the local network reuses so the same
// client code addresses both.
const (
	RegistryCanisterID   = "rwlgt-iiaaa-aaaaa-aaaaa-cai"
	GovernanceCanisterID = "rrkah-fqaaa-aaaaa-aaaaq-cai"
)
