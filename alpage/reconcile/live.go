package reconcile

import "alpnib.dev/alpage/source"

// Live is the live state reconcile compares the declared fleet with,
// already fetched (see Fetcher). Every map is keyed by id; a missing entry
// or a set Err means the fact could not be read, which reconcile reports
// as unknown rather than drift.
type Live struct {
	// RegistryVersion is the registry's latest version when reading began,
	// and the version every registry record was read at (get_value takes
	// it), so a report never mixes two registry states.
	RegistryVersion uint64 `json:"registry_version"`
	// Subnets holds each declared subnet's record, the record of each
	// subnet a node block names that no subnet block declares, and, when
	// nodes are declared, every subnet in the registry's subnet list.
	Subnets map[string]SubnetFacts `json:"subnets"`
	// SubnetListErr is set when the registry's subnet_list could not be
	// read (a failed registry read: the gate did not run).
	SubnetListErr string `json:"subnet_list_error,omitempty"`
	// DataCenters holds each declared data center's record.
	DataCenters map[string]DataCenterFacts `json:"data_centers"`
	// Providers holds each node provider a declared operator names.
	Providers map[string]ProviderFacts `json:"providers"`
	// Operators holds each declared operator's own record.
	Operators map[string]OperatorFacts `json:"operators"`
	// OperatorNodes holds, per declared operator, the nodes it owns on-chain:
	// from the node records at RegistryVersion when the registry can list
	// them (a certified copy), else per the registry explorer (a third
	// party).
	OperatorNodes map[string]OperatorNodes `json:"operator_nodes"`
	// Nodes holds each declared node's record.
	Nodes map[string]NodeFacts `json:"nodes"`
	// Chips holds the AMD KDS verdict per chip id (hex) found on-chain.
	Chips map[string]ChipFacts `json:"chips"`
	// Versions holds what each version-checked node runs.
	Versions map[string]VersionFacts `json:"versions"`
	// Elected says, per declared version id, whether the NNS elected it:
	// whether its replica_version_<id> record exists, the same fact the
	// registry checks when it accepts a deploy_guestos proposal. ElectedErr
	// is set when it could not be read (the elected check is then skipped,
	// as the schema says).
	Elected    map[string]bool `json:"elected"`
	ElectedErr string          `json:"elected_error,omitempty"`
	// HostOSElected says, per declared HostOS version id, whether its
	// hostos_version_<id> record exists, the fact the registry checks when
	// it deploys one; HostOSElectedErr is set when it could not be read.
	HostOSElected    map[string]bool `json:"hostos_elected,omitempty"`
	HostOSElectedErr string          `json:"hostos_elected_error,omitempty"`
}

// SubnetFacts is a subnet record as reconcile compares it.
type SubnetFacts struct {
	Found   bool     `json:"found"`
	Err     string   `json:"error,omitempty"`
	Members []string `json:"members,omitempty"`
	// Type and CostSchedule are the schema's words (application, free…);
	// CostSchedule is empty when the record leaves it unspecified.
	Type         string   `json:"type,omitempty"`
	CostSchedule string   `json:"cost_schedule,omitempty"`
	SevEnabled   bool     `json:"sev_enabled"`
	Admins       []string `json:"admins,omitempty"`
	// ReplicaVersion is the GuestOS version the record deploys to every
	// member (replica_version_id).
	ReplicaVersion string `json:"replica_version,omitempty"`
}

// ProviderFacts is what the NNS says of a node provider: whether
// governance lists it, and the operators the registry has under it with
// each one's data center.
type ProviderFacts struct {
	Known     bool              `json:"known"`
	Operators map[string]string `json:"operators,omitempty"` // operator id → dc id
	Err       string            `json:"error,omitempty"`
	// ErrFrom says which canister Err came from; the registry when empty.
	ErrFrom ReadSource `json:"error_from,omitempty"`
}

func (p ProviderFacts) errFrom() ReadSource {
	if p.ErrFrom == "" {
		return ReadRegistry
	}
	return p.ErrFrom
}

// DataCenterFacts is a data center record as reconcile compares it.
type DataCenterFacts struct {
	Found  bool   `json:"found"`
	Err    string `json:"error,omitempty"`
	Region string `json:"region,omitempty"`
}

// OperatorFacts is an operator's own record, read at the report's
// registry version: whether it exists, its provider and its data center.
type OperatorFacts struct {
	Found    bool   `json:"found"`
	Err      string `json:"error,omitempty"`
	Provider string `json:"provider,omitempty"`
	DC       string `json:"dc,omitempty"`
	// NodeAllowance, RewardableNodes and IPv6 are the record's (IPv6 nil
	// when unset).
	NodeAllowance   uint64            `json:"node_allowance"`
	RewardableNodes map[string]uint32 `json:"rewardable_nodes,omitempty"`
	IPv6            *string           `json:"ipv6,omitempty"`
}

// OperatorNodes is the node ids an operator owns: from the node records
// themselves (FromRegistry), else per the registry explorer.
type OperatorNodes struct {
	Nodes        []string `json:"nodes,omitempty"`
	Err          string   `json:"error,omitempty"`
	FromRegistry bool     `json:"from_registry,omitempty"`
}

// read is where the list came from, for the unknown counts.
func (o OperatorNodes) read() ReadSource {
	if o.FromRegistry {
		return ReadRegistry
	}
	return ReadExplorer
}

// label marks a row or warning resting on the list: the explorer's, as a
// third party; none for the registry's own records.
func (o OperatorNodes) label() string {
	if o.FromRegistry {
		return ""
	}
	return " [" + source.ExplorerLabel + "]"
}

// NodeFacts is a node record as reconcile compares it.
type NodeFacts struct {
	Found    bool   `json:"found"`
	Err      string `json:"error,omitempty"`
	Operator string `json:"operator,omitempty"`
	// Chip is the record's chip_id bytes (nil when it has none).
	Chip []byte `json:"chip,omitempty"`
	// IP and Port are the node's http endpoint.
	IP   string `json:"ip,omitempty"`
	Port uint32 `json:"port,omitempty"`
	// HostOS is the record's hostos_version_id ("" when unset).
	HostOS string `json:"hostos,omitempty"`
}

// ChipFacts is what is known of one on-chain chip: the KDS verdict asked
// now (Asked) and the cached positive verdict from state.json (Cached).
type ChipFacts struct {
	Asked   *source.Verdict `json:"asked,omitempty"`
	Cached  bool            `json:"cached"`
	Product string          `json:"product,omitempty"` // the cached product
}

// Version sources.
const (
	FromNode      = "node"
	FromDashboard = "dashboard"
)

// VersionFacts is what a node runs: from its own status endpoint, else
// from the dashboard; Err says why the node's own word is not the answer
// (with no Version, why neither answered).
type VersionFacts struct {
	Version string `json:"version,omitempty"`
	Source  string `json:"source,omitempty"`
	Err     string `json:"error,omitempty"`
	// DashboardStatus is the status the dashboard gave the node whose
	// version it answered for (UP, DOWN, DEGRADED, UNASSIGNED, …).
	DashboardStatus string `json:"dashboard_status,omitempty"`
	// TLSUnverified: the node's own endpoint answered over TLS whose
	// certificate was not checked (no --node-status-ca), so anyone on the
	// path could have said it.
	TLSUnverified bool `json:"tls_unverified,omitempty"`
}

// UnverifiedNodeLabel marks a version a node reported over TLS that was
// not checked.
const UnverifiedNodeLabel = "[node status; certificate not verified]"
