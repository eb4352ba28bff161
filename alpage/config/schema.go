package config

import "github.com/hashicorp/hcl/v2"

// The structs below are the whole v0.5.0 schema. Each field carries three
// tags: hcl (what gohcl decodes), since (the release it first appeared in)
// and doc (its description). docs/config.md is generated from them by
// `go generate` (see docs.go), and a test fails when a field lacks a doc or
// a since, or when the generated file is stale.

// Subnet is a `subnet "<name>" {}` block.
type Subnet struct {
	Name         string   `hcl:"name,label"`
	ID           string   `hcl:"id" since:"v0.1.0" doc:"Principal of the subnet."`
	Label        string   `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	SevEnabled   *bool    `hcl:"sev_enabled,optional" since:"v0.1.1" doc:"Whether the subnet runs with SEV-SNP enabled, reconciled against the registry's features.sev_enabled. Omitted means false."`
	Type         string   `hcl:"type,optional" since:"v0.2.0" doc:"Subnet type: application, verified_application, system, or cloud_engine. Omitted means application."`
	CostSchedule string   `hcl:"cost_schedule,optional" since:"v0.2.0" doc:"Canister cycles cost schedule: normal or free. Omitted means free for a cloud_engine, which the registry requires, and normal otherwise."`
	Admins       []string `hcl:"admins,optional" since:"v0.2.0" doc:"Principals with admin rights on the subnet (subnet_admins). Allowed only on a cloud_engine or a rented subnet (application on the free schedule), at most 10. Declaring none asserts none, so an admin added on-chain is drift. Order is not significant."`

	Range hcl.Range
}

// DataCenter is a `data_center "<name>" {}` block.
type DataCenter struct {
	Name   string `hcl:"name,label"`
	ID     string `hcl:"id" since:"v0.1.0" doc:"Registry data center id."`
	Label  string `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	Region string `hcl:"region,optional" since:"v0.1.0" doc:"Registry region string (e.g. Europe,CH,Vaud)."`

	Range hcl.Range
}

// NodeProvider is a `node_provider "<name>" {}` block.
type NodeProvider struct {
	Name           string `hcl:"name,label"`
	ID             string `hcl:"id" since:"v0.1.0" doc:"Principal of the node provider."`
	Label          string `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	Decommissioned bool   `hcl:"decommissioned,optional" since:"v0.5.0" doc:"Marks a node provider removed on-chain. Its block is kept so historical proposal payloads keep resolving to the ids they were submitted with; reconcile expects it, and every operator under it, to be absent from the registry."`

	Range hcl.Range
}

// NodeOperator is a `node_operator "<name>" {}` block.
type NodeOperator struct {
	Name           string `hcl:"name,label"`
	ID             string `hcl:"id" since:"v0.1.0" doc:"Principal of the node operator."`
	Label          string `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	Provider       string `hcl:"provider,optional" since:"v0.1.0" doc:"Id of its node provider (node_provider.<name>.id)."`
	DC             string `hcl:"dc,optional" since:"v0.1.0" doc:"Id of its data center (data_center.<name>.id)."`
	Decommissioned bool   `hcl:"decommissioned,optional" since:"v0.5.0" doc:"Marks a node operator removed on-chain. Its block is kept so historical proposal payloads keep resolving to the ids they were submitted with; reconcile expects it to be absent from the registry. Implied for every operator under a decommissioned node_provider."`

	// DecommissionedByProvider is true when Decommissioned was implied by a
	// decommissioned node_provider rather than declared.
	DecommissionedByProvider bool
	Range                    hcl.Range
}

// GuestOSVersion is a `guestos_version "<name>" {}` block.
type GuestOSVersion struct {
	Name    string `hcl:"name,label"`
	ID      string `hcl:"id" since:"v0.3.0" doc:"GuestOS/replica version hash. Spelled id, not hash, so it resolves through the same <kind>.<name>.id form as every other resource."`
	Label   string `hcl:"label,optional" since:"v0.3.0" doc:"Human-readable name (e.g. the release name)."`
	Default bool   `hcl:"default,optional" since:"v0.5.0" doc:"Marks the version every node is expected to run unless its own block overrides it, so a fleet-wide rollout is one edit here rather than one per node. At most one guestos_version may carry it; two is a load error. With a default declared, a node omitting guestos_version inherits it instead of going unchecked, so guestos_version = \"none\" is how a single node opts out."`

	Range hcl.Range
}

// Node is a `node "<name>" {}` block.
type Node struct {
	Name           string `hcl:"name,label"`
	ID             string `hcl:"id" since:"v0.1.0" doc:"Principal of the node."`
	Label          string `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	Subnet         string `hcl:"subnet,optional" since:"v0.1.0" doc:"Id of the subnet it belongs to (subnet.<name>.id). Empty means unassigned."`
	Operator       string `hcl:"operator,optional" since:"v0.1.0" doc:"Id of its node operator (node_operator.<name>.id)."`
	Decommissioned bool   `hcl:"decommissioned,optional" since:"v0.1.1" doc:"Marks a node deregistered on-chain. Its block is kept so historical proposal payloads keep resolving to the ids they were submitted with; reconcile expects it to be absent from the registry."`
	GuestOSVersion string `hcl:"guestos_version,optional" since:"v0.2.0" doc:"GuestOS/replica version this node is expected to run. Not a registry fact: the registry stores one version per subnet, so reconcile reads the node's own /api/v2/status impl_version, which needs IPv6. If the node is unreachable it falls back to the public dashboard, marking the row \"via dashboard\" since that data may lag. Reconcile also checks the version against the NNS elected set and marks it \"NOT ELECTED\" if absent; when that source is unreadable the check is skipped rather than failing. Omitted inherits the guestos_version marked default, and means unchecked when there is none; setting it while a default exists marks the row \"[override]\". \"none\" opts the node out of the check entirely."`
	ChipID         string `hcl:"chip_id,optional" since:"v0.4.0" doc:"The node's AMD SEV-SNP CHIP_ID as hex, the form AMD's KDS takes as its hwID parameter (base64 is also accepted; comparison is on the decoded bytes). 64 opaque bytes identifying the physical CPU, recorded by the registry canister only for a node onboarded with SEV. Pins hardware identity, not live TEE state. Reconcile also asks AMD KDS to vouch for the chip, caching the verdict in state.json. Omitted asserts the node carries none, so gaining, losing, or changing one is drift; an unread record reports \"unknown\"."`

	// Version is the effective GuestOS version after inheritance: the node's
	// own, else the default's; empty when unchecked (no default, or "none").
	Version string
	// VersionOverride is true when the node sets its own version while a
	// default exists (reconcile marks the row "[override]").
	VersionOverride bool
	// Chip is ChipID decoded (64 bytes), nil when omitted.
	Chip  []byte
	Range hcl.Range
}

// Provider is the `provider {}` block of proposals.hcl.
type Provider struct {
	Host         string  `hcl:"host,optional" since:"v0.1.0" doc:"Governance host URL. Defaults per command; overridden by --host."`
	Neuron       *uint64 `hcl:"neuron,optional" since:"v0.1.0" doc:"Proposer neuron id."`
	FetchRootKey *bool   `hcl:"fetch_root_key,optional" since:"v0.1.0" doc:"Whether to fetch the IC root key. Unset defaults to true for non-mainnet hosts."`

	Range hcl.Range
}

// Proposal is a `proposal "<name>" {}` block: common metadata plus exactly
// one nested block named after its kind.
type Proposal struct {
	Name    string `hcl:"name,label"`
	Kind    Kind   `hcl:"kind" since:"v0.1.0" doc:"Proposal kind; selects the nested block (membership, deploy_guestos, update_subnet, remove_nodes, remove_node_operators, remove_node_provider)."`
	Title   string `hcl:"title" since:"v0.1.0" doc:"Proposal title shown on the NNS."`
	Summary string `hcl:"summary,optional" since:"v0.1.0" doc:"Proposal summary (markdown)."`
	URL     string `hcl:"url,optional" since:"v0.1.0" doc:"Reference URL (e.g. forum thread)."`

	Membership          *Membership          `hcl:"membership,block" since:"v0.3.0" doc:"The change_subnet_membership body, for kind \"membership\"." table:"-"`
	DeployGuestOS       *DeployGuestOS       `hcl:"deploy_guestos,block" since:"v0.1.0" doc:"The deploy_guestos_to_all_subnet_nodes body, for kind \"deploy_guestos\"." table:"-"`
	UpdateSubnet        *UpdateSubnet        `hcl:"update_subnet,block" since:"v0.5.0" doc:"The update_subnet body, for kind \"update_subnet\"." table:"-"`
	RemoveNodes         *RemoveNodes         `hcl:"remove_nodes,block" since:"v0.5.0" doc:"The remove_nodes body, for kind \"remove_nodes\"." table:"-"`
	RemoveNodeOperators *RemoveNodeOperators `hcl:"remove_node_operators,block" since:"v0.5.0" doc:"The remove_node_operators body, for kind \"remove_node_operators\"." table:"-"`
	RemoveNodeProvider  *RemoveNodeProvider  `hcl:"remove_node_provider,block" since:"v0.5.0" doc:"The remove_node_provider body, for kind \"remove_node_provider\"." table:"-"`

	Range hcl.Range
	// Places says where the body of the proposal's kind writes what: by
	// field path ("subnet_id", "features.sev_enabled", "add.id") and by
	// each value it holds (an id in canonical text, a version hash), the
	// first place each is written. Where names the place a check is about.
	Places map[string]hcl.Range
}

// Where is the place key (a field path or a value) is written in p's body,
// else p's block header.
func (p *Proposal) Where(key string) hcl.Range {
	if r, ok := p.Places[key]; ok {
		return r
	}
	return p.Range
}

// Kind is a proposal kind.
type Kind string

// The proposal kinds, one per nested block.
const (
	KindMembership          Kind = "membership"
	KindDeployGuestOS       Kind = "deploy_guestos"
	KindUpdateSubnet        Kind = "update_subnet"
	KindRemoveNodes         Kind = "remove_nodes"
	KindRemoveNodeOperators Kind = "remove_node_operators"
	KindRemoveNodeProvider  Kind = "remove_node_provider"
)

// Kinds lists every proposal kind in documentation order.
var Kinds = []Kind{KindMembership, KindDeployGuestOS, KindUpdateSubnet, KindRemoveNodes, KindRemoveNodeOperators, KindRemoveNodeProvider}

// Membership is the body of a "membership" proposal.
type Membership struct {
	SubnetID string    `hcl:"subnet_id" since:"v0.3.0" doc:"Subnet whose membership changes (subnet.<name>.id)."`
	Add      []NodeRef `hcl:"add,block" since:"v0.3.0" doc:"A node to add to the subnet; repeatable. See the add / remove block."`
	Remove   []NodeRef `hcl:"remove,block" since:"v0.3.0" doc:"A node to remove from the subnet; repeatable. See the add / remove block."`
}

// NodeRef is an add, remove (membership) or node (remove_nodes) block.
type NodeRef struct {
	ID    string `hcl:"id" since:"v0.1.0" doc:"Node id (node.<name>.id)."`
	Label string `hcl:"label,optional" since:"v0.1.0" doc:"Optional human-readable name."`
}

// DeployGuestOS is the body of a "deploy_guestos" proposal.
type DeployGuestOS struct {
	SubnetID         string `hcl:"subnet_id" since:"v0.1.0" doc:"Subnet whose nodes to upgrade (subnet.<name>.id)."`
	ReplicaVersionID string `hcl:"replica_version_id" since:"v0.1.0" doc:"Replica version to deploy to every node in the subnet (guestos_version.<name>.id, or the hash itself). Must be elected by the NNS: preflight checks the registry for a replica_version_<id> record (read via the registry explorer) and refuses an unelected version, since the NNS would reject the proposal. --force submits anyway, and also lets apply proceed when that lookup fails (downgraded to a warning); plan always degrades that way. Preflight additionally resolves the version's release name and election proposal from the public dashboard, which is display-only and degrades to a note when unavailable."`
}

// UpdateSubnet is the body of an "update_subnet" proposal. Every field but
// subnet_id is optional, and nil means "leave untouched on-chain".
type UpdateSubnet struct {
	SubnetID                   string          `hcl:"subnet_id" since:"v0.5.0" doc:"Subnet whose configuration changes (subnet.<name>.id)."`
	IsHalted                   *bool           `hcl:"is_halted,optional" since:"v0.5.0" doc:"Whether the subnet is halted: a halted subnet no longer creates or executes blocks. This is how a subnet is frozen for a recovery, and setting it back to false is how it resumes."`
	HaltAtCupHeight            *bool           `hcl:"halt_at_cup_height,optional" since:"v0.5.0" doc:"Halt the subnet once it reaches the next CUP height rather than immediately, so it stops at a known state. The registry resets this flag when a new CUP proposal is approved and sets is_halted instead, so the subnet stays halted until a later proposal sets is_halted = false."`
	MaxNumberOfCanisters       *uint64         `hcl:"max_number_of_canisters,optional" since:"v0.5.0" doc:"Maximum number of canisters that may be present on the subnet at any one time. 0 does not mean unlimited: it means the replica's own default applies."`
	SSHReadonlyAccess          *[]string       `hcl:"ssh_readonly_access,optional" since:"v0.5.0" doc:"Public keys whose owners get \"readonly\" SSH access to every replica on the subnet, for when a subnet recovery has to be performed. The list is replaced, not merged, so it must name every key that keeps access; an empty list revokes all of them. Preflight flags a declared list that clears existing entries."`
	SSHBackupAccess            *[]string       `hcl:"ssh_backup_access,optional" since:"v0.5.0" doc:"Public keys whose owners get \"backup\" SSH access to the subnet's nodes, which is what makes backing up the NNS possible. Replaced wholesale like ssh_readonly_access."`
	SubnetAdmins               *[]string       `hcl:"subnet_admins,optional" since:"v0.5.0" doc:"Principals that have admin privileges on the subnet. Replaced wholesale, so the list must be complete."`
	Features                   *Features       `hcl:"features,block" since:"v0.5.0" doc:"The subnet's feature flags. Replaced wholesale; see the features block."`
	ResourceLimits             *ResourceLimits `hcl:"resource_limits,block" since:"v0.5.0" doc:"The subnet's resource-consumption limits. Replaced wholesale; see the resource_limits block."`
	UnitDelayMillis            *uint64         `hcl:"unit_delay_millis,optional" since:"v0.5.0" doc:"Unit delay for the blockmaker, in milliseconds."`
	InitialNotaryDelayMillis   *uint64         `hcl:"initial_notary_delay_millis,optional" since:"v0.5.0" doc:"Initial delay for the notary, in milliseconds, which gives rank-0 blocks time to propagate."`
	DKGIntervalLength          *uint64         `hcl:"dkg_interval_length,optional" since:"v0.5.0" doc:"Length of every DKG interval, counted in the rounds that follow the DKG summary."`
	DKGDealingsPerBlock        *uint64         `hcl:"dkg_dealings_per_block,optional" since:"v0.5.0" doc:"Upper bound on the number of DKG dealings allowed in one block."`
	MaxIngressBytesPerMessage  *uint64         `hcl:"max_ingress_bytes_per_message,optional" since:"v0.5.0" doc:"Maximum bytes per ingress message. A hard cap: a message over the limit is dropped."`
	MaxIngressBytesPerBlock    *uint64         `hcl:"max_ingress_bytes_per_block,optional" since:"v0.5.0" doc:"How big an ingress payload may be when held in memory, which may exceed max_block_payload_size since ingress messages are stripped before a block is disseminated. 0 means the replica's built-in default; too high a value drives up replica memory use."`
	MaxIngressMessagesPerBlock *uint64         `hcl:"max_ingress_messages_per_block,optional" since:"v0.5.0" doc:"Maximum number of ingress messages per block."`
	MaxBlockPayloadSize        *uint64         `hcl:"max_block_payload_size,optional" since:"v0.5.0" doc:"Maximum size in bytes a block payload may have when sent over the wire. Setting it too high slows block delivery to peers, which can cause forks as higher-rank blocks get proposed meanwhile."`
}

// Features is the features block inside update_subnet.
type Features struct {
	CanisterSandboxing bool `hcl:"canister_sandboxing" since:"v0.5.0" doc:"Whether canister execution happens in a sandboxed process. Disabled by default."`
	HTTPRequests       bool `hcl:"http_requests" since:"v0.5.0" doc:"Whether canisters on the subnet may perform outbound HTTP(S) requests."`
	SevEnabled         bool `hcl:"sev_enabled" since:"v0.5.0" doc:"Whether the subnet runs with SEV-SNP enabled. Required because the features record is replaced wholesale, but it cannot be changed: the registry only accepts sev_enabled as it was set when the subnet was created, and traps on any change after the proposal is adopted. State the subnet's current value; preflight and the dry-run both reject anything else."`
}

// ResourceLimits is the resource_limits block inside update_subnet.
type ResourceLimits struct {
	MaximumStateSize  uint64 `hcl:"maximum_state_size" since:"v0.5.0" doc:"Maximum subnet state size in bytes."`
	MaximumStateDelta uint64 `hcl:"maximum_state_delta" since:"v0.5.0" doc:"Maximum subnet state delta in bytes."`
}

// RemoveNodes is the body of a "remove_nodes" proposal.
type RemoveNodes struct {
	Nodes []NodeRef `hcl:"node,block" since:"v0.5.0" doc:"A node to deregister. Repeat the block for each one."`
}

// RemoveNodeOperators is the body of a "remove_node_operators" proposal.
type RemoveNodeOperators struct {
	Operators []string `hcl:"operators" since:"v0.5.0" doc:"Ids of the node operators whose records to delete (node_operator.<name>.id)."`
}

// RemoveNodeProvider is the body of a "remove_node_provider" proposal.
type RemoveNodeProvider struct {
	NodeProviderID string `hcl:"node_provider_id" since:"v0.5.0" doc:"Principal of the node provider to remove (node_provider.<name>.id)."`
}
