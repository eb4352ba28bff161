package kinds

import (
	"context"
	"fmt"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Preflight: a kind's Fetch reads the live state its checks need through
// a Reader (alpage/preflight's fetcher, every read at one registry
// version) into facts of the kind's own type, and its Check is a pure
// function of those facts.

// Reader is what a kind's Fetch reads live state through.
type Reader interface {
	// Subnet is the subnet's record as get_subnet renders it; nil when
	// the registry has none.
	Subnet(ctx context.Context, id string) (*nns.SubnetRecord, error)
	// SubnetRecord is the subnet's record as the registry stores it; nil
	// when there is none.
	SubnetRecord(ctx context.Context, id string) (*nns.SubnetRecordPB, error)
	// Nodes says, of each node, whether it is registered, in which subnet
	// and with what.
	Nodes(ctx context.Context, ids []string) (map[string]NodeFacts, error)
	// Version says whether a replica version is elected, and its release.
	Version(ctx context.Context, id string) VersionFacts
	// Operators says, of each operator, whether it has a record and which
	// nodes it owns.
	Operators(ctx context.Context, ids []string) map[string]OperatorFacts
	// Provider says whether governance knows a node provider and which
	// operators it has.
	Provider(ctx context.Context, id string) (ProviderFacts, error)
	// Health says how healthy each node is, from the ICP dashboard and
	// the node's own status endpoint; every id has an entry.
	Health(ctx context.Context, ids []string) map[string]HealthFacts
	// Record is the value of a registry key at the version read; found
	// is false when the key has none.
	Record(ctx context.Context, key string) (value []byte, found bool, err error)
}

// Options change how strict the checks are.
type Options struct {
	// Force submits an unelected deploy_guestos version anyway and lets a
	// failed elected lookup pass; both become warnings.
	Force bool
	// ForApply is set by apply: a failed elected lookup then refuses unless
	// Force. Plan always degrades it to a warning.
	ForApply bool
	// Minimums holds, per subnet id, the Nakamoto minimums its block
	// declares (min_nakamoto_coefficients); an attribute left out takes
	// the default for the subnet's size.
	Minimums map[string]map[string]int
}

// Severity is how much a single check matters.
type Severity string

// The severities, mildest first.
const (
	OK      Severity = "ok"
	Note    Severity = "note"
	Warning Severity = "warning"
	Flagged Severity = "flagged"
	Refused Severity = "refused"
)

// Check is one finding, phrased as a sentence a person can act on.
type Check struct {
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Subject is the id the check is about (node, operator, version).
	Subject string `json:"subject,omitempty"`
	// Field, Live and Declared describe one update_subnet setting.
	Field    string `json:"field,omitempty"`
	Live     string `json:"live,omitempty"`
	Declared string `json:"declared,omitempty"`
	// Source names a third-party source the finding rests on
	// ("per registry explorer", "via ICP dashboard").
	Source string `json:"source,omitempty"`
	// At is where a flagged or refused check's field or id is written in
	// the configuration (file:line; the proposal's block when the check
	// is about none).
	At string `json:"at,omitempty"`
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
	// HostOS is the record's hostos_version_id; "" when absent.
	HostOS string `json:"hostos_version_id,omitempty"`
	Err    string `json:"error,omitempty"`
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
	// ReleaseSource labels where the release name was read (the ICP
	// dashboard, a third party).
	ReleaseSource string
}

// OperatorFacts is what is known of a node operator.
type OperatorFacts struct {
	Registered    bool
	RegisteredErr string
	// Record is the operator's record as stored; nil when it has none or
	// it could not be read.
	Record *nns.NodeOperatorRecordPB
	// Nodes are the ids of the nodes it owns: from the node records of the
	// certified registry copy when the fetcher reads one (NodesSource ""),
	// else per the registry explorer (NodesSource the explorer's label).
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

// members is the subnet's membership as principal text.
func members(rec *nns.SubnetRecord) []string {
	out := make([]string, 0, len(rec.Membership))
	for _, m := range rec.Membership {
		if p, err := principal.FromBytes(m); err == nil {
			out = append(out, p.String())
		}
	}
	return out
}

func missingSubnet(id string) []Check {
	return []Check{{Severity: Refused, Subject: id, Message: fmt.Sprintf("subnet %s is not in the registry; check subnet_id", id)}}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// maxListedIDs is how many ids a check names before it says how many
// more there are.
const maxListedIDs = 5

// shortList names at most maxListedIDs ids: "a, b, c" or "a, b, c, d, e
// and 37 more".
func shortList(ids []string) string {
	if len(ids) <= maxListedIDs {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListedIDs], ", "), len(ids)-maxListedIDs)
}
