package readback

import (
	"fmt"
	"strconv"
	"strings"

	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/proposal"
	"alpnib.dev/ic/nns"
)

// Comparison is how a proposal read back relates to the declared one it is
// imported as.
type Comparison struct {
	// KindMismatch says how the proposal's action differs from the
	// declared kind; import refuses it without --force.
	KindMismatch string
	// PayloadDiffers says the payload on-chain is not the declared one
	// (the kind agrees): a warning, since the config's hash is recorded.
	PayloadDiffers string
	// Uncompared says what could not be compared and why: recorded in
	// state.json beside the entry.
	Uncompared string
}

// Compare relates o to p: the action against p's kind (governance's action,
// or the dashboard's action type and NNS function), then the payload bytes
// when governance gave them.
func Compare(p *proposal.Proposal, o Observation) Comparison {
	var c Comparison
	switch o.Source {
	case FromGovernance:
		got, fn, known := actionOf(o.Action)
		switch {
		case !known:
			c.Uncompared = fmt.Sprintf("neither the kind nor the payload was compared: proposal %d runs %s, which no %s proposal makes and alp cannot read", o.ProposalID, got, p.Kind)
			return c
		case fn != p.Function:
			c.KindMismatch = fmt.Sprintf("proposal %d runs %s, but %q is a %s proposal (%s)", o.ProposalID, got, p.Name, p.Kind, functionName(p.Function))
			return c
		case kinds.ShapeOf(o.Action) != p.Shape:
			// the same function, or the same native action, with another
			// change: AddOrRemoveNodeProvider's ToAdd is not a removal
			c.KindMismatch = fmt.Sprintf("proposal %d makes the action %s, but %q is a %s proposal (%s)", o.ProposalID, kinds.ShapeOf(o.Action), p.Name, p.Kind, p.Shape)
			return c
		}
		// Import reads the live record, so the payload it holds against
		// the one on-chain is the one apply would send, inherited parts
		// included. A payload of the declaration alone (as alp built it
		// offline, or an earlier release encoded it) would reset those
		// parts when adopted: it is not the declared change, and is said.
		sum, _, _ := PayloadSHA256(o.Action)
		switch {
		case sum == p.PayloadSHA256:
		case p.Pins(sum):
			c.PayloadDiffers = fmt.Sprintf("the payload on-chain (sha256 %s) is the declaration alone, without the live parts the payload alp builds now keeps (sha256 %s, which is what is recorded): adopting proposal %d resets what the registry replaces whole and the declaration leaves out (such as a subnet's query limits); check that it is the one you meant", sum, p.PayloadSHA256, o.ProposalID)
		default:
			c.PayloadDiffers = fmt.Sprintf("the payload on-chain (sha256 %s) differs from the one the config declares (sha256 %s), which is what is recorded; check that proposal %d is the one you meant", sum, p.PayloadSHA256, o.ProposalID)
		}
	case FromDashboard:
		fn, known := dashboardFunction(o.DashboardAction, o.DashboardFunction)
		switch {
		case o.DashboardAction == "":
			c.Uncompared = fmt.Sprintf("neither the kind nor the payload was compared: the ICP dashboard gives no action for proposal %d", o.ProposalID)
		case !known:
			c.Uncompared = fmt.Sprintf("neither the kind nor the payload was compared: the ICP dashboard names proposal %d's action %q (function %q), which alp does not know", o.ProposalID, o.DashboardAction, o.DashboardFunction)
		case fn != p.Function:
			c.KindMismatch = fmt.Sprintf("proposal %d runs %s per the ICP dashboard, but %q is a %s proposal (%s)", o.ProposalID, functionName(fn), p.Name, p.Kind, functionName(p.Function))
		default:
			c.Uncompared = fmt.Sprintf("the payload was not compared: the ICP dashboard does not give the bytes of proposal %d", o.ProposalID)
		}
	}
	return c
}

// actionOf names an on-chain action and the NNS function it runs
// (FunctionUnspecified for AddOrRemoveNodeProvider, the one native action
// alp makes); known is false for any other action.
func actionOf(a *nns.Action) (name string, fn nns.NnsFunction, known bool) {
	switch {
	case a == nil:
		return "no action", 0, false
	case a.ExecuteNnsFunction != nil:
		fn = nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction)
		return functionName(fn), fn, fn != nns.FunctionUnspecified
	case a.AddOrRemoveNodeProvider != nil:
		return functionName(nns.FunctionUnspecified), nns.FunctionUnspecified, true
	case a.Motion != nil:
		return "a motion", 0, false
	}
	return "an action alp does not know", 0, false
}

// dashboardFunction reads the dashboard's action type and NNS function
// name (CHANGE_SUBNET_MEMBERSHIP, NNS_FUNCTION_CHANGE_SUBNET_MEMBERSHIP,
// ChangeSubnetMembership or the number all name the same function).
func dashboardFunction(action, function string) (nns.NnsFunction, bool) {
	switch squash(action) {
	case "ADDORREMOVENODEPROVIDER":
		return nns.FunctionUnspecified, true
	case "EXECUTENNSFUNCTION":
	default:
		return 0, false
	}
	if n, err := strconv.ParseInt(function, 10, 32); err == nil && n > 0 {
		return nns.NnsFunction(n), true
	}
	want := strings.TrimPrefix(squash(function), "NNSFUNCTION")
	for fn := nns.NnsFunction(1); fn < 100; fn++ {
		if _, named := fn.RegistryMethod(); named && strings.TrimPrefix(squash(fn.String()), "NNSFUNCTION") == want {
			return fn, true
		}
	}
	return 0, false
}

// squash upper-cases s and drops everything but letters and digits.
func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func functionName(fn nns.NnsFunction) string {
	if fn == nns.FunctionUnspecified {
		return "AddOrRemoveNodeProvider"
	}
	return fn.String()
}
