package nns

// Registry records are protobuf messages stored under string keys. The types
// here are the views alp works with; their encoding is the generated code in
// registrypb (see records_pb.go), whose .proto files carry the upstream field
// numbers (docs/decisions.md).

// Registry key prefixes (ic_registry_keys).
const (
	SubnetListKey              = "subnet_list"
	BlessedReplicaVersionsKey  = "blessed_replica_versions"
	subnetRecordPrefix         = "subnet_record_"
	nodeRecordPrefix           = "node_record_"
	nodeOperatorRecordPrefix   = "node_operator_record_"
	dataCenterRecordPrefix     = "data_center_record_"
	replicaVersionRecordPrefix = "replica_version_"
)

// SubnetRecordKey is the key of a subnet's record.
func SubnetRecordKey(subnetID string) string { return subnetRecordPrefix + subnetID }

// NodeRecordKey is the key of a node's record.
func NodeRecordKey(nodeID string) string { return nodeRecordPrefix + nodeID }

// NodeOperatorRecordKey is the key of a node operator's record.
func NodeOperatorRecordKey(operatorID string) string { return nodeOperatorRecordPrefix + operatorID }

// DataCenterRecordKey is the key of a data center's record.
func DataCenterRecordKey(dcID string) string { return dataCenterRecordPrefix + dcID }

// ReplicaVersionRecordKey is the key whose presence means a version is
// elected.
func ReplicaVersionRecordKey(versionID string) string { return replicaVersionRecordPrefix + versionID }

// HostosVersionRecordKey is the key whose presence means a HostOS version
// is elected (HOSTOS_VERSION_KEY_PREFIX, docs/decisions.md).
func HostosVersionRecordKey(versionID string) string { return "hostos_version_" + versionID }

// Record subnet types (registry SubnetType enum).
const (
	SubnetTypeUnspecified         int32 = 0
	SubnetTypeApplication         int32 = 1
	SubnetTypeSystem              int32 = 2
	SubnetTypeVerifiedApplication int32 = 4
	SubnetTypeCloudEngine         int32 = 5
)

// Record cost schedules (registry CanisterCyclesCostSchedule enum).
const (
	CostScheduleUnspecified int32 = 0
	CostScheduleNormal      int32 = 1
	CostScheduleFree        int32 = 2
)

// SubnetFeaturesRecord is the SubnetFeatures protobuf.
type SubnetFeaturesRecord struct {
	CanisterSandboxing bool  // 2
	HTTPRequests       bool  // 3
	SevEnabled         *bool // 9 (optional)
}

// ResourceLimitsRecord is the ResourceLimits protobuf.
type ResourceLimitsRecord struct {
	MaximumStateSize            *uint64 // 1
	MaximumStateDelta           *uint64 // 2
	MaximumQueryInstructions    *uint64 // 3
	MaximumQueryWalltimeSeconds *uint64 // 4
}

// SubnetRecordPB is the registry's SubnetRecord protobuf.
type SubnetRecordPB struct {
	Membership                 [][]byte              // 3
	MaxIngressBytesPerMessage  uint64                // 5
	UnitDelayMillis            uint64                // 7
	InitialNotaryDelayMillis   uint64                // 8
	ReplicaVersionID           string                // 9
	DkgIntervalLength          uint64                // 10
	StartAsNns                 bool                  // 14
	SubnetType                 int32                 // 15
	DkgDealingsPerBlock        uint64                // 16
	IsHalted                   bool                  // 17
	MaxIngressMessagesPerBlock uint64                // 18
	MaxBlockPayloadSize        uint64                // 19
	Features                   *SubnetFeaturesRecord // 23
	MaxNumberOfCanisters       uint64                // 24
	SSHReadonlyAccess          []string              // 25
	SSHBackupAccess            []string              // 26
	HaltAtCupHeight            bool                  // 28
	CanisterCyclesCostSchedule int32                 // 30
	SubnetAdmins               [][]byte              // 31 (types.v1.PrincipalId{raw=1})
	MaxIngressBytesPerBlock    uint64                // 32
	RecalledReplicaVersionIDs  []string              // 33
	ResourceLimits             *ResourceLimitsRecord // 34

	rest []byte // the fields not named above (chain_key_config, unknown ones)
}

// NodeRecordPB is the registry's NodeRecord protobuf (the fields used here).
type NodeRecordPB struct {
	Xnet            *ConnectionEndpoint // 5
	HTTP            *ConnectionEndpoint // 6
	NodeOperatorID  []byte              // 15
	ChipID          []byte              // 16 (optional: nil when absent)
	HostosVersionID *string             // 17 hostos_version_id (optional)
	RewardType      *int32              // 20 node_reward_type (optional; NodeRewardType)

	rest []byte // the fields not named above
}

// ConnectionEndpoint is the registry's ConnectionEndpoint protobuf.
type ConnectionEndpoint struct {
	IPAddr string // 1
	Port   uint32 // 2
}

// NodeOperatorRecordPB is the registry's NodeOperatorRecord protobuf.
type NodeOperatorRecordPB struct {
	NodeOperatorPrincipalID []byte            // 1
	NodeAllowance           uint64            // 2
	NodeProviderPrincipalID []byte            // 3
	DcID                    string            // 4
	RewardableNodes         map[string]uint32 // 5
	IPv6                    *string           // 6 (optional)

	rest []byte // the fields not named above
}

// DataCenterRecordPB is the registry's DataCenterRecord protobuf.
type DataCenterRecordPB struct {
	ID     string // 1
	Region string // 2
	Owner  string // 3
	Gps    *Gps   // 4

	rest []byte // the fields not named above
}

// ReplicaVersionRecordPB is the registry's ReplicaVersionRecord protobuf.
type ReplicaVersionRecordPB struct {
	ReleasePackageSha256Hex string   // 6
	ReleasePackageURLs      []string // 7

	rest []byte // the fields not named above (guest_launch_measurement_sha256_hex)
}

// BlessedReplicaVersionsPB lists the elected versions.
type BlessedReplicaVersionsPB struct {
	BlessedVersionIDs []string // 1
}

// SubnetListRecordPB lists every subnet id.
type SubnetListRecordPB struct {
	Subnets [][]byte // 2
}
