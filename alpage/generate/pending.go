package generate

import (
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/candid"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// PendingDeclared is what the declared proposals that may still execute
// will change: those state.json does not record, and those it records as
// open or adopted (or without a status yet). An executed one shows in the
// live registry already; a rejected or failed one changes nothing.
func PendingDeclared(ps []*config.Proposal, st *state.State) []Change {
	var out []Change
	for _, p := range ps {
		if e := st.Proposals[p.Name]; e != nil && e.Status.Terminal() {
			continue
		}
		out = append(out, ChangesOf(p)...)
	}
	return out
}

// ChangesOf is what a declared proposal changes.
func ChangesOf(p *config.Proposal) []Change {
	var out []Change
	switch {
	case p.Membership != nil:
		for _, a := range p.Membership.Add {
			out = append(out, Change{OpAdd, a.ID, p.Membership.SubnetID})
		}
		for _, r := range p.Membership.Remove {
			out = append(out, Change{OpRemove, r.ID, p.Membership.SubnetID})
		}
	case p.DeployGuestOS != nil:
		out = append(out, Change{OpDeploy, p.DeployGuestOS.SubnetID, p.DeployGuestOS.ReplicaVersionID})
	case p.UpdateSubnet != nil && p.UpdateSubnet.SubnetAdmins != nil:
		out = append(out, Change{OpAdmins, p.UpdateSubnet.SubnetID, strings.Join(sortedCopy(*p.UpdateSubnet.SubnetAdmins), ",")})
	case p.RemoveNodes != nil:
		for _, n := range p.RemoveNodes.Nodes {
			out = append(out, Change{OpRemoveNode, n.ID, ""})
		}
	case p.RemoveNodeOperators != nil:
		for _, o := range p.RemoveNodeOperators.Operators {
			out = append(out, Change{OpRemoveOperator, o, ""})
		}
	case p.RemoveNodeProvider != nil:
		out = append(out, Change{OpRemoveProvider, p.RemoveNodeProvider.NodeProviderID, ""})
	}
	return out
}

// PendingInGovernance is what the open or adopted proposals governance
// lists will change, whoever proposed them: an action alp does not make,
// or a payload it cannot read, changes nothing it generates.
func PendingInGovernance(infos []nns.ProposalInfo) []Change {
	var out []Change
	for _, info := range infos {
		if s := nns.ProposalStatus(info.Status); (s != nns.StatusOpen && s != nns.StatusAdopted) || info.Proposal == nil {
			continue
		}
		out = append(out, ChangesOfAction(info.Proposal.Action)...)
	}
	return out
}

// ChangesOfAction is what an on-chain action changes.
func ChangesOfAction(a *nns.Action) []Change {
	switch {
	case a == nil:
		return nil
	case a.AddOrRemoveNodeProvider != nil:
		if c := a.AddOrRemoveNodeProvider.Change; c != nil && c.ToRemove != nil && c.ToRemove.ID != nil {
			return []Change{{OpRemoveProvider, c.ToRemove.ID.String(), ""}}
		}
		return nil
	case a.ExecuteNnsFunction == nil:
		return nil
	}
	payload := a.ExecuteNnsFunction.Payload
	var out []Change
	switch nns.NnsFunction(a.ExecuteNnsFunction.NnsFunction) {
	case nns.FunctionChangeSubnetMembership:
		var p nns.ChangeSubnetMembershipPayload
		if candid.Unmarshal(payload, &p) != nil {
			return nil
		}
		for _, n := range p.NodeIDsAdd {
			out = append(out, Change{OpAdd, n.String(), p.SubnetID.String()})
		}
		for _, n := range p.NodeIDsRemove {
			out = append(out, Change{OpRemove, n.String(), p.SubnetID.String()})
		}
	case nns.FunctionDeployGuestosToAllSubnetNodes:
		var p nns.DeployGuestosToAllSubnetNodesPayload
		if candid.Unmarshal(payload, &p) == nil {
			out = append(out, Change{OpDeploy, p.SubnetID.String(), p.ReplicaVersionID})
		}
	case nns.FunctionUpdateConfigOfSubnet:
		var p nns.UpdateSubnetPayload
		if candid.Unmarshal(payload, &p) == nil && p.SubnetAdmins != nil {
			out = append(out, Change{OpAdmins, p.SubnetID.String(), strings.Join(sortedCopy(texts(*p.SubnetAdmins)), ",")})
		}
	case nns.FunctionRemoveNodes:
		var p nns.RemoveNodesPayload
		if candid.Unmarshal(payload, &p) == nil {
			for _, n := range p.NodeIDs {
				out = append(out, Change{OpRemoveNode, n.String(), ""})
			}
		}
	case nns.FunctionRemoveNodeOperators:
		var p nns.RemoveNodeOperatorsPayload
		if candid.Unmarshal(payload, &p) != nil {
			return nil
		}
		var ops []string
		for _, b := range p.NodeOperatorsToRemove {
			if id, err := principal.FromBytes(b); err == nil {
				ops = append(ops, id.String())
			}
		}
		if p.NodeOperatorPrincipalsToRemove != nil {
			ops = append(ops, texts(p.NodeOperatorPrincipalsToRemove.Principals)...)
		}
		slices.Sort(ops)
		for _, o := range slices.Compact(ops) {
			out = append(out, Change{OpRemoveOperator, o, ""})
		}
	}
	return out
}

func texts(ps []principal.Principal) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
