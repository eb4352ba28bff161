package registry

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// ErrInvariant marks a mutation the registry refused because it would break
// one of the registry's rules. The real canister traps in that case, which
// governance records as the proposal's failure reason.
var ErrInvariant = errors.New("registry invariant")

func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvariant}, args...)...)
}

// ChangeSubnetMembership runs change_subnet_membership: the subnet must
// exist, every added node must be registered and in no subnet (this one
// included), and every removed node must be a member. The new membership
// is the added nodes followed by the remaining members, in the registry's
// order.
func (r *Registry) ChangeSubnetMembership(p nns.ChangeSubnetMembershipPayload) error {
	return r.update(func(v view) ([]Mutation, error) {
		rec, err := v.existingSubnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		members := rec.Membership
		for _, n := range p.NodeIDsRemove {
			i := slices.IndexFunc(members, func(m []byte) bool { return string(m) == string(n.Bytes()) })
			if i < 0 {
				return nil, refuse("Nodes that should be removed do not belong to the provided subnet (node %s, subnet %s).", n, p.SubnetID)
			}
			members = slices.Delete(slices.Clone(members), i, i+1)
		}
		seen := map[string]bool{}
		var added [][]byte
		for _, n := range p.NodeIDsAdd {
			if seen[string(n.Bytes())] {
				return nil, refuse("node %s is added twice", n)
			}
			seen[string(n.Bytes())] = true
			if _, ok, err := v.node(n); err != nil {
				return nil, err
			} else if !ok {
				return nil, refuse("node %s does not exist", n)
			}
			if s, in, err := v.subnetOf(n); err != nil {
				return nil, err
			} else if in && !(s == p.SubnetID && slices.ContainsFunc(p.NodeIDsRemove, func(x principal.Principal) bool { return x == n })) {
				return nil, refuse("node %s is already a member of subnet %s", n, s)
			}
			added = append(added, n.Bytes())
		}
		// As the registry does: the added nodes first, then the remaining members.
		rec.Membership = append(added, members...)
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// DeployGuestosToAllSubnetNodes runs deploy_guestos_to_all_subnet_nodes in
// the canister's order: the version must be elected (its
// replica_version_<id> record present), then the subnet must exist.
func (r *Registry) DeployGuestosToAllSubnetNodes(p nns.DeployGuestosToAllSubnetNodesPayload) error {
	return r.update(func(v view) ([]Mutation, error) {
		if _, ok := v.get(nns.ReplicaVersionRecordKey(p.ReplicaVersionID)); !ok {
			return nil, refuse("Replica version '%s' is NOT blessed. The blessed versions are: [%s].", p.ReplicaVersionID, strings.Join(v.elected(), ", "))
		}
		rec, err := v.existingSubnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		rec.ReplicaVersionID = p.ReplicaVersionID
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// UpdateSubnet runs update_subnet: set fields replace the record's, omitted
// (null) ones are untouched. subnet_type may only restate the current type
// and features.sev_enabled may not change, as the registry asserts.
func (r *Registry) UpdateSubnet(p nns.UpdateSubnetPayload) error {
	return r.update(func(v view) ([]Mutation, error) {
		rec, err := v.existingSubnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		if p.SubnetType != nil {
			want, known := p.SubnetType.Record()
			if !known || want != rec.SubnetType {
				return nil, refuse("subnet_type of subnet %s cannot be changed", p.SubnetID)
			}
		}
		if p.Features != nil {
			cur := rec.Features
			if cur == nil {
				cur = &nns.SubnetFeaturesRecord{}
			}
			if boolOr(p.Features.SevEnabled) != boolOr(cur.SevEnabled) {
				return nil, refuse("sev_enabled of subnet %s cannot be changed (is %t)", p.SubnetID, boolOr(cur.SevEnabled))
			}
			rec.Features = &nns.SubnetFeaturesRecord{
				CanisterSandboxing: p.Features.CanisterSandboxing,
				HTTPRequests:       p.Features.HTTPRequests,
				SevEnabled:         cur.SevEnabled,
			}
		}
		setU64(&rec.UnitDelayMillis, p.UnitDelayMillis)
		setU64(&rec.InitialNotaryDelayMillis, p.InitialNotaryDelayMillis)
		setU64(&rec.DkgIntervalLength, p.DkgIntervalLength)
		setU64(&rec.DkgDealingsPerBlock, p.DkgDealingsPerBlock)
		setU64(&rec.MaxIngressBytesPerMessage, p.MaxIngressBytesPerMessage)
		setU64(&rec.MaxIngressBytesPerBlock, p.MaxIngressBytesPerBlock)
		setU64(&rec.MaxIngressMessagesPerBlock, p.MaxIngressMessagesPerBlock)
		setU64(&rec.MaxBlockPayloadSize, p.MaxBlockPayloadSize)
		setU64(&rec.MaxNumberOfCanisters, p.MaxNumberOfCanisters)
		setBool(&rec.IsHalted, p.IsHalted)
		setBool(&rec.HaltAtCupHeight, p.HaltAtCupHeight)
		setBool(&rec.StartAsNns, p.StartAsNns)
		if p.SSHReadonlyAccess != nil {
			rec.SSHReadonlyAccess = slices.Clone(*p.SSHReadonlyAccess)
		}
		if p.SSHBackupAccess != nil {
			rec.SSHBackupAccess = slices.Clone(*p.SSHBackupAccess)
		}
		if p.SubnetAdmins != nil {
			rec.SubnetAdmins = nil
			for _, a := range *p.SubnetAdmins {
				rec.SubnetAdmins = append(rec.SubnetAdmins, a.Bytes())
			}
		}
		if p.ResourceLimits != nil {
			rec.ResourceLimits = &nns.ResourceLimitsRecord{
				MaximumStateSize:  p.ResourceLimits.MaximumStateSize,
				MaximumStateDelta: p.ResourceLimits.MaximumStateDelta,
			}
		}
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// RemoveNodes runs remove_nodes as the canister does: the node ids are
// sorted and de-duplicated, then each must be registered (else the whole
// proposal aborts), must be in no subnet, and must have its operator's
// record; each removed node gives its operator one allowance back.
func (r *Registry) RemoveNodes(p nns.RemoveNodesPayload) error {
	return r.update(func(v view) ([]Mutation, error) {
		var muts []Mutation
		allowance := map[principal.Principal]*nns.NodeOperatorRecordPB{}
		ids := slices.Clone(p.NodeIDs)
		slices.SortFunc(ids, func(a, b principal.Principal) int { return bytes.Compare(a.Bytes(), b.Bytes()) })
		ids = slices.Compact(ids)
		for _, n := range ids {
			rec, ok, err := v.node(n)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, refuse("do_remove_nodes: Aborting node removal: Node Id %s not found in the registry", n)
			}
			if s, in, err := v.subnetOf(n); err != nil {
				return nil, err
			} else if in {
				return nil, refuse("do_remove_nodes: Cannot remove a node that is a member of a subnet. This node is a member of Subnet: %s", nns.SubnetRecordKey(s.String()))
			}
			muts = append(muts, Mutation{Key: nns.NodeRecordKey(n.String()), Delete: true})
			op, err := principal.FromBytes(rec.NodeOperatorID)
			if err != nil {
				return nil, refuse("do_remove_nodes: Aborting node removal: node %s has no valid node operator id", n)
			}
			o := allowance[op]
			if o == nil {
				cur, ok, err := v.operator(op)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, refuse("do_remove_nodes: Aborting node removal: Node Operator Id %s not found in the registry", nns.NodeOperatorRecordKey(op.String()))
				}
				o = &cur
				allowance[op] = o
			}
			o.NodeAllowance++
		}
		for _, op := range sortedOps(allowance) {
			muts = append(muts, Mutation{Key: nns.NodeOperatorRecordKey(op.String()), Value: allowance[op].Marshal()})
		}
		return muts, nil
	})
}

// RemoveNodeOperators runs remove_node_operators: it deletes the named
// operators' records, silently skipping one that has no record or still owns
// nodes, exactly as the registry does (so preflight must catch the latter).
func (r *Registry) RemoveNodeOperators(p nns.RemoveNodeOperatorsPayload) error {
	return r.update(func(v view) ([]Mutation, error) {
		var ops []principal.Principal
		for _, raw := range p.NodeOperatorsToRemove {
			op, err := principal.FromBytes(raw)
			if err != nil {
				return nil, refuse("node_operators_to_remove: %v", err)
			}
			ops = append(ops, op)
		}
		if p.NodeOperatorPrincipalsToRemove != nil {
			ops = append(ops, p.NodeOperatorPrincipalsToRemove.Principals...)
		}
		var muts []Mutation
		done := map[principal.Principal]bool{}
		for _, op := range ops {
			if done[op] {
				continue
			}
			done[op] = true
			if _, ok, err := v.operator(op); err != nil {
				return nil, err
			} else if !ok {
				continue
			}
			nodes, err := v.nodesOf(op)
			if err != nil {
				return nil, err
			}
			if len(nodes) > 0 {
				continue
			}
			muts = append(muts, Mutation{Key: nns.NodeOperatorRecordKey(op.String()), Delete: true})
		}
		return muts, nil
	})
}

// OperatorsOfProvider returns each operator record whose provider is
// provider, with its data center record (empty when the operator names no
// known data center), as get_node_operators_and_dcs_of_node_provider does.
func (r *Registry) OperatorsOfProvider(provider principal.Principal) ([]nns.NodeOperatorRecordPB, []nns.DataCenterRecordPB, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v := view{r}
	var ops []nns.NodeOperatorRecordPB
	var dcs []nns.DataCenterRecordPB
	for _, id := range v.ids("node_operator_record_") {
		op, _, err := v.operator(id)
		if err != nil {
			return nil, nil, err
		}
		if string(op.NodeProviderPrincipalID) != string(provider.Bytes()) {
			continue
		}
		var dc nns.DataCenterRecordPB
		if b, ok := v.get(nns.DataCenterRecordKey(op.DcID)); ok {
			if err := dc.Unmarshal(b); err != nil {
				return nil, nil, fmt.Errorf("decode data center %s: %w", op.DcID, err)
			}
		}
		ops = append(ops, op)
		dcs = append(dcs, dc)
	}
	return ops, dcs, nil
}

func boolOr(b *bool) bool { return b != nil && *b }

func setU64(dst *uint64, v *uint64) {
	if v != nil {
		*dst = *v
	}
}

func setBool(dst *bool, v *bool) {
	if v != nil {
		*dst = *v
	}
}

func sortedOps(m map[principal.Principal]*nns.NodeOperatorRecordPB) []principal.Principal {
	out := make([]principal.Principal, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, principal.Principal.Compare)
	return out
}
