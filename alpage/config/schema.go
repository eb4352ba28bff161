package config

import (
	"github.com/hashicorp/hcl/v2"

	"alpnib.dev/alpage/kinds"
)

// The structs below are the whole schema (v0.5.0 and the fields since). Each field carries three
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
	// MinNakamoto is the least Nakamoto coefficient per attribute a
	// membership proposal may leave the subnet with.
	MinNakamoto map[string]int `hcl:"min_nakamoto_coefficients,optional" since:"v0.6.0" doc:"Least Nakamoto coefficient per attribute (node_provider, data_center, data_center_owner, country) a membership proposal may leave the subnet with, e.g. { node_provider = 5, country = 3 }; preflight flags a proposal that breaks one. An attribute left out takes the default for the subnet's size: what the IC target topology's limits (one node per provider, data center and owner; two per country, three from 28 nodes) guarantee, 5, 5, 5 and 3 for 13 nodes, lowered where dre allows more on the NNS, SNS, II, fiduciary and European subnets (by subnet id)."`

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
	Name               string            `hcl:"name,label"`
	ID                 string            `hcl:"id" since:"v0.1.0" doc:"Principal of the node operator."`
	Label              string            `hcl:"label,optional" since:"v0.1.0" doc:"Human-readable name."`
	Provider           string            `hcl:"provider,optional" since:"v0.1.0" doc:"Id of its node provider (node_provider.<name>.id)."`
	DC                 string            `hcl:"dc,optional" since:"v0.1.0" doc:"Id of its data center (data_center.<name>.id)."`
	Decommissioned     bool              `hcl:"decommissioned,optional" since:"v0.5.0" doc:"Marks a node operator removed on-chain. Its block is kept so historical proposal payloads keep resolving to the ids they were submitted with; reconcile expects it to be absent from the registry. Implied for every operator under a decommissioned node_provider."`
	NodeAllowance      *uint64           `hcl:"node_allowance,optional" since:"v0.6.0" doc:"How many nodes the operator may still add: the registry's node_allowance, which adding a node lowers and removing one raises. Omitted is not checked."`
	RewardableNodes    map[string]uint32 `hcl:"rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the number of nodes of that type its provider is rewarded for, e.g. { \"type3.1\" = 4 }; compared with the record's map as a whole. Omitted is not checked."`
	MaxRewardableNodes map[string]uint32 `hcl:"max_rewardable_nodes,optional" since:"v0.6.0" doc:"Node type to the most nodes of that type the operator can be rewarded for. Sent when alp plan --generate adds the operator; alp does not read it back from the registry, so reconcile does not compare it."`
	IPv6               *string           `hcl:"ipv6,optional" since:"v0.6.0" doc:"The operator's IPv6 address as the registry stores it: eight groups of hexadecimal digits, no :: shorthand. Omitted is not checked."`

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

// HostOSVersion is a `hostos_version "<name>" {}` block.
type HostOSVersion struct {
	Name    string `hcl:"name,label"`
	ID      string `hcl:"id" since:"v0.6.0" doc:"HostOS version hash, as the registry's hostos_version_<id> record and a node record's hostos_version_id name it."`
	Label   string `hcl:"label,optional" since:"v0.6.0" doc:"Human-readable name (e.g. the release name)."`
	Default bool   `hcl:"default,optional" since:"v0.6.0" doc:"Marks the HostOS version every node is expected to run unless its own block overrides it, as guestos_version's default does. At most one hostos_version may carry it; a node omitting hostos_version inherits it, and hostos_version = \"none\" opts a node out."`

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
	HostOSVersion  string `hcl:"hostos_version,optional" since:"v0.6.0" doc:"HostOS version this node is expected to run (hostos_version.<name>.id, or the hash). Unlike guestos_version it is a registry fact: reconcile reads the node record's hostos_version_id, certified, and marks a version with no hostos_version_<id> record NOT ELECTED. Omitted inherits the hostos_version marked default, and means unchecked when there is none; \"none\" opts the node out."`
	Replace        bool   `hcl:"replace,optional" since:"v0.6.0" doc:"Marks a subnet member for replacement: alp plan --generate proposes the declared, healthy, unassigned node that keeps the subnet's Nakamoto coefficients highest in its place, as it does for a member that is down or degraded. Only on a node declared in a subnet. Once the proposal executes, declare the node without subnet and replace."`

	// Version is the effective GuestOS version after inheritance: the node's
	// own, else the default's; empty when unchecked (no default, or "none").
	Version string
	// VersionOverride is true when the node sets its own version while a
	// default exists (reconcile marks the row "[override]").
	VersionOverride bool
	// HostOS is the effective HostOS version after inheritance: the node's
	// own, else the default's; empty when unchecked.
	HostOS string
	// HostOSOverride is true when the node sets its own HostOS version
	// while a default exists.
	HostOSOverride bool
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

	// Body is the proposal's nested block, of its kind's type
	// (alpage/kinds): what the kind decodes, checks and builds.
	Body kinds.Body

	Range hcl.Range
	// Places says where the body of the proposal's kind writes what: by
	// field path ("subnet_id", "features.sev_enabled", "add.id") and by
	// each value it holds (an id in canonical text, a version hash), the
	// first place each is written. Where names the place a check is about.
	Places map[string]hcl.Range

	// bodies is every kind block the proposal holds, by kind, as decoded:
	// more than Body when blocks of other kinds are (wrongly) there.
	bodies map[Kind]kinds.Body
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

// The kinds alp ships, for code that names one; alpage/kinds.All is the
// list of every kind.
const (
	KindMembership          Kind = "membership"
	KindDeployGuestOS       Kind = "deploy_guestos"
	KindUpdateSubnet        Kind = "update_subnet"
	KindRemoveNodes         Kind = "remove_nodes"
	KindRemoveNodeOperators Kind = "remove_node_operators"
	KindRemoveNodeProvider  Kind = "remove_node_provider"
)
