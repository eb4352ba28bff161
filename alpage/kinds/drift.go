package kinds

import (
	"slices"
	"strings"

	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
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

// ChangesOfAction is what an on-chain action changes: the changes of the
// kind whose proposals make it; nil for an action no kind makes, or a
// payload that does not decode.
func ChangesOfAction(a *nns.Action) []Change {
	if a == nil {
		return nil
	}
	for _, k := range All {
		if cs, mine := k.Changes(a); mine {
			return cs
		}
	}
	return nil
}

// executePayload decodes into the payload of a's ExecuteNnsFunction when
// it runs fn; mine is false for another action, ok false for a payload
// that does not decode.
func executePayload(a *nns.Action, fn nns.NnsFunction, into any) (mine, ok bool) {
	e := a.ExecuteNnsFunction
	if e == nil || nns.NnsFunction(e.NnsFunction) != fn {
		return false, false
	}
	return true, candid.Unmarshal(e.Payload, into) == nil
}

// joinSorted is ids sorted, each once, comma-joined (an OpAdmins Target).
func joinSorted(ids []string) string {
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
