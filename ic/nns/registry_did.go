package nns

import (
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/principal"
)

// Go types for the registry canister methods alp calls, field for field as
// rs/registry/canister/canister/registry.did declares them. Candid mapping:
// `opt T` is *T, `vec T` is []T, `blob` is []byte, a record is a struct whose
// fields carry `candid:"name"` tags, and a variant is a struct of pointer
// fields of which exactly one is set.

// ChangeSubnetMembershipPayload is change_subnet_membership's argument
// (NNS function 31).
type ChangeSubnetMembershipPayload struct {
	NodeIDsAdd    []principal.Principal `candid:"node_ids_add"`
	SubnetID      principal.Principal   `candid:"subnet_id"`
	NodeIDsRemove []principal.Principal `candid:"node_ids_remove"`
}

// DeployGuestosToAllSubnetNodesPayload is deploy_guestos_to_all_subnet_nodes'
// argument (NNS function 11).
type DeployGuestosToAllSubnetNodesPayload struct {
	SubnetID         principal.Principal `candid:"subnet_id"`
	ReplicaVersionID string              `candid:"replica_version_id"`
}

// RemoveNodesPayload is remove_nodes' argument (NNS function 18).
type RemoveNodesPayload struct {
	NodeIDs []principal.Principal `candid:"node_ids"`
}

// RemoveNodeOperatorsPayload is remove_node_operators' argument (NNS function
// 23). Operators are named either as raw principal bytes in
// NodeOperatorsToRemove (the original field) or as principals in
// NodeOperatorPrincipalsToRemove (the newer one); the registry takes the union.
type RemoveNodeOperatorsPayload struct {
	NodeOperatorsToRemove          [][]byte                `candid:"node_operators_to_remove"`
	NodeOperatorPrincipalsToRemove *NodeOperatorPrincipals `candid:"node_operator_principals_to_remove"`
}

// NodeOperatorPrincipals wraps a list of node operator principals.
type NodeOperatorPrincipals struct {
	Principals []principal.Principal `candid:"principals"`
}

// SubnetFeatures is the registry.did SubnetFeatures record. sev_enabled is
// `opt bool` on the wire; the registry refuses to change it after creation.
type SubnetFeatures struct {
	CanisterSandboxing bool  `candid:"canister_sandboxing"`
	HTTPRequests       bool  `candid:"http_requests"`
	SevEnabled         *bool `candid:"sev_enabled"`
}

// SubnetType is the registry.did SubnetType variant (unit cases).
type SubnetType struct {
	candid.OneOf
	Application         *struct{} `candid:"application"`
	VerifiedApplication *struct{} `candid:"verified_application"`
	System              *struct{} `candid:"system"`
	CloudEngine         *struct{} `candid:"cloud_engine"`
}

// Name is the case that is set, "" for none.
func (t SubnetType) Name() string {
	switch {
	case t.Application != nil:
		return "application"
	case t.VerifiedApplication != nil:
		return "verified_application"
	case t.System != nil:
		return "system"
	case t.CloudEngine != nil:
		return "cloud_engine"
	}
	return ""
}

// SubnetTypeNamed builds the variant for a case name.
func SubnetTypeNamed(name string) (SubnetType, bool) {
	var t SubnetType
	switch name {
	case "application":
		t.Application = &struct{}{}
	case "verified_application":
		t.VerifiedApplication = &struct{}{}
	case "system":
		t.System = &struct{}{}
	case "cloud_engine":
		t.CloudEngine = &struct{}{}
	default:
		return t, false
	}
	return t, true
}

// subnetTypeRecords pairs each registry.did SubnetType case with the record
// enum (SubnetRecordPB.SubnetType) of the same subnet type.
var subnetTypeRecords = map[string]int32{
	"application":          SubnetTypeApplication,
	"verified_application": SubnetTypeVerifiedApplication,
	"system":               SubnetTypeSystem,
	"cloud_engine":         SubnetTypeCloudEngine,
}

// Record is the record enum for the case that is set; false for none.
func (t SubnetType) Record() (int32, bool) {
	code, ok := subnetTypeRecords[t.Name()]
	return code, ok
}

// SubnetTypeOfRecord is the variant for a record enum; false for
// unspecified or unknown values.
func SubnetTypeOfRecord(code int32) (SubnetType, bool) {
	for name, c := range subnetTypeRecords {
		if c == code {
			return SubnetTypeNamed(name)
		}
	}
	return SubnetType{}, false
}

// ResourceLimits is the subnet's resource-consumption limits.
type ResourceLimits struct {
	MaximumStateSize            *uint64 `candid:"maximum_state_size"`
	MaximumStateDelta           *uint64 `candid:"maximum_state_delta"`
	MaximumQueryInstructions    *uint64 `candid:"maximum_query_instructions"`
	MaximumQueryWalltimeSeconds *uint64 `candid:"maximum_query_walltime_seconds"`
}

// UpdateSubnetPayload is update_subnet's argument (NNS function 7). Every
// setting is opt: null leaves the registry's value untouched. Two fields are
// plain, not opt, and must be sent: subnet_id and set_gossip_config_to_default.
// The gossip/chain-key fields alp never sets are kept so the record has the
// canister's shape; they are always null.
type UpdateSubnetPayload struct {
	SubnetID                   principal.Principal    `candid:"subnet_id"`
	SetGossipConfigToDefault   bool                   `candid:"set_gossip_config_to_default"`
	UnitDelayMillis            *uint64                `candid:"unit_delay_millis"`
	MaxDuplicity               *uint32                `candid:"max_duplicity"`
	Features                   *SubnetFeatures        `candid:"features"`
	HaltAtCupHeight            *bool                  `candid:"halt_at_cup_height"`
	PfnEvaluationPeriodMs      *uint32                `candid:"pfn_evaluation_period_ms"`
	MaxIngressBytesPerMessage  *uint64                `candid:"max_ingress_bytes_per_message"`
	DkgDealingsPerBlock        *uint64                `candid:"dkg_dealings_per_block"`
	MaxBlockPayloadSize        *uint64                `candid:"max_block_payload_size"`
	StartAsNns                 *bool                  `candid:"start_as_nns"`
	IsHalted                   *bool                  `candid:"is_halted"`
	MaxIngressMessagesPerBlock *uint64                `candid:"max_ingress_messages_per_block"`
	MaxNumberOfCanisters       *uint64                `candid:"max_number_of_canisters"`
	RetransmissionRequestMs    *uint32                `candid:"retransmission_request_ms"`
	DkgIntervalLength          *uint64                `candid:"dkg_interval_length"`
	RegistryPollPeriodMs       *uint32                `candid:"registry_poll_period_ms"`
	MaxChunkWaitMs             *uint32                `candid:"max_chunk_wait_ms"`
	ReceiveCheckCacheSize      *uint32                `candid:"receive_check_cache_size"`
	SSHBackupAccess            *[]string              `candid:"ssh_backup_access"`
	MaxChunkSize               *uint32                `candid:"max_chunk_size"`
	InitialNotaryDelayMillis   *uint64                `candid:"initial_notary_delay_millis"`
	MaxArtifactStreamsPerPeer  *uint32                `candid:"max_artifact_streams_per_peer"`
	SubnetType                 *SubnetType            `candid:"subnet_type"`
	SSHReadonlyAccess          *[]string              `candid:"ssh_readonly_access"`
	MaxIngressBytesPerBlock    *uint64                `candid:"max_ingress_bytes_per_block"`
	SubnetAdmins               *[]principal.Principal `candid:"subnet_admins"`
	ResourceLimits             *ResourceLimits        `candid:"resource_limits"`
}

// GetSubnetRequest is get_subnet's argument.
type GetSubnetRequest struct {
	SubnetID *principal.Principal `candid:"subnet_id"`
}

// SubnetRecord is the subnet record as get_subnet returns it: the registry's
// SubnetRecord protobuf rendered as Candid (membership as raw principal
// bytes), field for field as rs/registry/canister/src/get_subnet.rs declares
// it (docs/decisions.md). Fields alp does not read (chain_key_config) are
// left out; Candid decoding ignores extra fields.
type SubnetRecord struct {
	Membership                 [][]byte              `candid:"membership"`
	MaxIngressBytesPerMessage  uint64                `candid:"max_ingress_bytes_per_message"`
	UnitDelayMillis            uint64                `candid:"unit_delay_millis"`
	InitialNotaryDelayMillis   uint64                `candid:"initial_notary_delay_millis"`
	ReplicaVersionID           string                `candid:"replica_version_id"`
	DkgIntervalLength          uint64                `candid:"dkg_interval_length"`
	StartAsNns                 bool                  `candid:"start_as_nns"`
	SubnetType                 SubnetType            `candid:"subnet_type"`
	DkgDealingsPerBlock        uint64                `candid:"dkg_dealings_per_block"`
	IsHalted                   bool                  `candid:"is_halted"`
	MaxIngressMessagesPerBlock uint64                `candid:"max_ingress_messages_per_block"`
	MaxIngressBytesPerBlock    uint64                `candid:"max_ingress_bytes_per_block"`
	MaxBlockPayloadSize        uint64                `candid:"max_block_payload_size"`
	Features                   *SubnetFeatures       `candid:"features"`
	MaxNumberOfCanisters       uint64                `candid:"max_number_of_canisters"`
	SSHReadonlyAccess          []string              `candid:"ssh_readonly_access"`
	SSHBackupAccess            []string              `candid:"ssh_backup_access"`
	HaltAtCupHeight            bool                  `candid:"halt_at_cup_height"`
	CanisterCyclesCostSchedule CostSchedule          `candid:"canister_cycles_cost_schedule"`
	SubnetAdmins               []principal.Principal `candid:"subnet_admins"`
	RecalledReplicaVersionIDs  []string              `candid:"recalled_replica_version_ids"`
	ResourceLimits             *ResourceLimits       `candid:"resource_limits"`
}

// CostSchedule is the registry.did CanisterCyclesCostSchedule variant.
type CostSchedule struct {
	candid.OneOf
	Normal *struct{} `candid:"Normal"`
	Free   *struct{} `candid:"Free"`
}

// GetSubnetResponse is get_subnet's result variant.
type GetSubnetResponse struct {
	candid.OneOf
	Ok  *SubnetRecord `candid:"Ok"`
	Err *string       `candid:"Err"`
}

// Gps is a data center's coordinates.
type Gps struct {
	Latitude  float32 `candid:"latitude"`
	Longitude float32 `candid:"longitude"`
}

// DataCenterRecordDid is registry.did's DataCenterRecord.
type DataCenterRecordDid struct {
	ID     string `candid:"id"`
	Gps    *Gps   `candid:"gps"`
	Region string `candid:"region"`
	Owner  string `candid:"owner"`
}

// NodeTypeCount is one `record { text; nat32 }` entry of rewardable_nodes.
type NodeTypeCount struct {
	NodeType string `candid:"0"`
	Count    uint32 `candid:"1"`
}

// NodeOperatorRecordDid is registry.did's NodeOperatorRecord.
type NodeOperatorRecordDid struct {
	IPv6                    *string         `candid:"ipv6"`
	MaxRewardableNodes      []NodeTypeCount `candid:"max_rewardable_nodes"`
	NodeOperatorPrincipalID []byte          `candid:"node_operator_principal_id"`
	NodeAllowance           uint64          `candid:"node_allowance"`
	RewardableNodes         []NodeTypeCount `candid:"rewardable_nodes"`
	NodeProviderPrincipalID []byte          `candid:"node_provider_principal_id"`
	DcID                    string          `candid:"dc_id"`
}

// OperatorAndDc is one `record { DataCenterRecord; NodeOperatorRecord }`.
type OperatorAndDc struct {
	DataCenter   DataCenterRecordDid   `candid:"0"`
	NodeOperator NodeOperatorRecordDid `candid:"1"`
}

// GetNodeOperatorsAndDcsOfNodeProviderResponse is the result variant of
// get_node_operators_and_dcs_of_node_provider.
type GetNodeOperatorsAndDcsOfNodeProviderResponse struct {
	candid.OneOf
	Ok  *[]OperatorAndDc `candid:"Ok"`
	Err *string          `candid:"Err"`
}

// GetChunkRequest is get_chunk's argument: the sha256 of the chunk's content.
type GetChunkRequest struct {
	ContentSha256 *[]byte `candid:"content_sha256"`
}

// Chunk is one piece of a large registry value.
type Chunk struct {
	Content *[]byte `candid:"content"`
}

// GetChunkResponse is get_chunk's result variant.
type GetChunkResponse struct {
	candid.OneOf
	Ok  *Chunk  `candid:"Ok"`
	Err *string `candid:"Err"`
}

// AddNodeOperatorPayload is add_node_operator's argument (NNS function 8,
// NNS_FUNCTION_ASSIGN_NOID), field for field as registry.did declares it
// (docs/decisions.md). rewardable_nodes and max_rewardable_nodes are Rust
// BTreeMaps: Candid `vec record { text; nat32 }`, in key order.
type AddNodeOperatorPayload struct {
	NodeOperatorPrincipalID *principal.Principal `candid:"node_operator_principal_id"`
	NodeProviderPrincipalID *principal.Principal `candid:"node_provider_principal_id"`
	NodeAllowance           uint64               `candid:"node_allowance"`
	DcID                    string               `candid:"dc_id"`
	RewardableNodes         []NodeTypeCount      `candid:"rewardable_nodes"`
	IPv6                    *string              `candid:"ipv6"`
	MaxRewardableNodes      *[]NodeTypeCount     `candid:"max_rewardable_nodes"`
}

// UpdateNodeOperatorConfigPayload is update_node_operator_config's argument
// (NNS function 16). Every field but rewardable_nodes is opt, and null
// leaves the record's value; rewardable_nodes and max_rewardable_nodes
// replace the record's map whole, and an empty one leaves it.
type UpdateNodeOperatorConfigPayload struct {
	NodeOperatorID     *principal.Principal `candid:"node_operator_id"`
	NodeAllowance      *uint64              `candid:"node_allowance"`
	DcID               *string              `candid:"dc_id"`
	RewardableNodes    []NodeTypeCount      `candid:"rewardable_nodes"`
	NodeProviderID     *principal.Principal `candid:"node_provider_id"`
	IPv6               *string              `candid:"ipv6"`
	SetIPv6ToNone      *bool                `candid:"set_ipv6_to_none"`
	MaxRewardableNodes *[]NodeTypeCount     `candid:"max_rewardable_nodes"`
}

// DeployHostosToSomeNodesPayload is deploy_hostos_to_some_nodes' argument
// (NNS function 51): the nodes, and the HostOS version they run (null
// clears it).
type DeployHostosToSomeNodesPayload struct {
	NodeIDs         []principal.Principal `candid:"node_ids"`
	HostosVersionID *string               `candid:"hostos_version_id"`
}

// NodeTypeCounts is m as a Rust BTreeMap<String, u32> travels: its entries
// in key order.
func NodeTypeCounts(m map[string]uint32) []NodeTypeCount {
	out := make([]NodeTypeCount, 0, len(m))
	for k, v := range m {
		out = append(out, NodeTypeCount{NodeType: k, Count: v})
	}
	slices.SortFunc(out, func(a, b NodeTypeCount) int { return strings.Compare(a.NodeType, b.NodeType) })
	return out
}

// CountsMap is the map a vec record { text; nat32 } holds.
func CountsMap(c []NodeTypeCount) map[string]uint32 {
	out := make(map[string]uint32, len(c))
	for _, e := range c {
		out[e.NodeType] = e.Count
	}
	return out
}

// IPv6FormatOK is the registry's check_ipv6_format: eight colon-separated
// hexadecimal numbers below 65536, each parsed as a Rust i32 in base 16
// would be (a sign is accepted; "::" shorthand is not).
func IPv6FormatOK(s string) bool {
	parts := strings.Split(s, ":")
	for _, p := range parts {
		n, err := strconv.ParseInt(p, 16, 32)
		if err != nil || n >= 65536 {
			return false
		}
	}
	return len(parts) == 8
}
