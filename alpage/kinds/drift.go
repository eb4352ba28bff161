package kinds

import (
	"slices"
	"strings"

	"alpnib.dev/ic/principal"
)

// Drift: a kind says what a declared proposal of it changes (Closes) and
// what an on-chain proposal of it changes (Changes), in one vocabulary, so
// `alp plan --generate` sees which drift a proposal already under way
// closes, whoever made it.

// Op is what one change does.
type Op string

// The changes proposals make, one per node, subnet, operator or provider.
const (
	OpAdd            Op = "add"             // Subject node joins subnet Target
	OpRemove         Op = "remove"          // Subject node leaves subnet Target
	OpDeploy         Op = "deploy"          // subnet Subject runs version Target
	OpAdmins         Op = "admins"          // subnet Subject's admins become Target (sorted, comma-joined)
	OpRemoveNode     Op = "remove_node"     // node Subject is deregistered
	OpRemoveOperator Op = "remove_operator" // operator Subject's record is deleted
	OpRemoveProvider Op = "remove_provider" // provider Subject is removed
)

// Change is one thing a proposal changes on-chain. Two proposals that
// make the same Change close the same drift.
type Change struct {
	Op      Op
	Subject string
	Target  string
}

// AdminsTarget is ids sorted, each once, comma-joined: an OpAdmins
// Change's Target, so that two lists of the same admins compare equal.
func AdminsTarget(ids []string) string {
	s := slices.Clone(ids)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

func texts(ps []principal.Principal) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
