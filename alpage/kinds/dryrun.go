package kinds

import (
	"context"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Dry run: a kind's Seed says which live records the local registry must
// start from for its payload's execution to meet the registry's real
// invariants, through a Seeder (alpage/dryrun's gatherer, every read at
// one registry version).

// Seeder reads live records into a dry run's seed.
type Seeder interface {
	// Records seeds the records of keys.
	Records(ctx context.Context, keys ...string) error
	// AllSubnets seeds subnet_list and every subnet record in it: whether
	// a node is a member of some subnet is only written in those.
	AllSubnets(ctx context.Context) error
	// SubnetWithMembers seeds subnet_list, the subnet's record and its
	// members' node records.
	SubnetWithMembers(ctx context.Context, id principal.Principal) error
	// Nodes seeds the node records of ids and their operators' records.
	Nodes(ctx context.Context, ids []principal.Principal) error
	// Subnet is the subnet's record as seeded; ok is false when it is not.
	Subnet(id principal.Principal) (rec *nns.SubnetRecordPB, ok bool, err error)
	// OperatorNodes seeds the nodes each operator owns, or notes that
	// they could not be listed.
	OperatorNodes(ctx context.Context, ops []principal.Principal) error
	// Providers seeds the node providers governance knows.
	Providers(ctx context.Context) error
}

// LocalRegistry is the local registry after execution, as Effects reads
// it; *ic/localnet/registry.Registry is one.
type LocalRegistry interface {
	NodeOperator(id principal.Principal) (nns.NodeOperatorRecordPB, bool, error)
	NodesOfOperator(operator principal.Principal) ([]principal.Principal, error)
}
