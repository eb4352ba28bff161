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

// The mutations below refuse in the order the registry canister checks
// (rs/registry/canister/src/mutations in dfinity/ic; docs/decisions.md names
// each file and revision), with its messages, and then check the
// invariants the canister checks before it applies anything (mutate). Where
// the canister traps on a failed assertion the message is its panic text.

// ChangeSubnetMembership runs change_subnet_membership in the canister's
// order: the subnet must exist; every node to remove must be a member; the
// new membership is the added nodes followed by the current members, less
// the removed ones, with adjacent repeats collapsed (Rust's Vec::dedup);
// no other subnet (in subnet_list order) may hold a node of it; then the
// invariants judge it (an unregistered node, a repeated one, an empty
// subnet).
func (r *Registry) ChangeSubnetMembership(p nns.ChangeSubnetMembershipPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		rec, err := v.existingSubnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		current := rec.Membership
		for _, n := range p.NodeIDsRemove {
			if !slices.ContainsFunc(current, func(m []byte) bool { return string(m) == string(n.Bytes()) }) {
				return nil, refuse("Nodes that should be removed do not belong to the provided subnet. (node %s is not a member of subnet %s)", n, p.SubnetID)
			}
		}
		var next [][]byte
		for _, n := range p.NodeIDsAdd {
			next = append(next, n.Bytes())
		}
		next = append(next, current...)
		next = slices.DeleteFunc(next, func(m []byte) bool {
			return slices.ContainsFunc(p.NodeIDsRemove, func(x principal.Principal) bool { return string(x.Bytes()) == string(m) })
		})
		next = slices.CompactFunc(next, func(a, b []byte) bool { return string(a) == string(b) })
		subnets, ok, err := v.subnetList()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, refuse("set_subnet_membership_mutation: subnet list record not found in the registry.")
		}
		for _, s := range subnets {
			if s == p.SubnetID {
				continue
			}
			other, err := v.existingSubnet(s)
			if err != nil {
				return nil, err
			}
			var both []string
			for _, m := range next {
				if !slices.ContainsFunc(other.Membership, func(o []byte) bool { return string(o) == string(m) }) {
					continue
				}
				id, err := principal.FromBytes(m)
				if err != nil {
					return nil, fmt.Errorf("subnet %s lists a member that is not a principal: %w", s, err)
				}
				if !contains(both, id.String()) {
					both = append(both, id.String())
				}
			}
			if len(both) > 0 {
				return nil, refuse("set_subnet_membership_mutation: Subnet %s already contains some members that are to be added: {%s}", s, strings.Join(both, ", "))
			}
		}
		rec.Membership = next
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// DeployGuestosToAllSubnetNodes runs deploy_guestos_to_all_subnet_nodes in
// the canister's order: the version must be elected (its
// replica_version_<id> record present), then the subnet must exist, then
// the invariants hold for the record it writes.
func (r *Registry) DeployGuestosToAllSubnetNodes(p nns.DeployGuestosToAllSubnetNodesPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		if _, ok := v.get(nns.ReplicaVersionRecordKey(p.ReplicaVersionID)); !ok {
			return nil, refuse("Replica version '%s' is NOT elected. The elected versions are: [%s].", p.ReplicaVersionID, strings.Join(v.elected(), ", "))
		}
		// Then the record, read without get_subnet_or_panic's words.
		rec, ok, err := v.subnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, refuse("Error while fetching the subnet record")
		}
		rec.ReplicaVersionID = p.ReplicaVersionID
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// UpdateSubnet runs update_subnet in the canister's order: the subnet must
// exist; features may not change the effective sev_enabled (absent and
// false are the same); subnet_type may only restate the current type (an
// assertion, EXC-408); then set fields replace the record's, omitted
// (null) ones are untouched, features and resource_limits wholesale; then
// the invariants hold (SSH lists of at most 50 keys, a SEV subnet's nodes
// have chips, admins only on a rented subnet).
func (r *Registry) UpdateSubnet(p nns.UpdateSubnetPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		rec, err := v.existingSubnet(p.SubnetID)
		if err != nil {
			return nil, err
		}
		if p.Features != nil {
			was := rec.Features != nil && boolOr(rec.Features.SevEnabled)
			if is := boolOr(p.Features.SevEnabled); is != was {
				return nil, refuse("Proposal attempts to change sev_enabled for Subnet '%s' from %t to %t, but sev_enabled can only be set during subnet creation.", p.SubnetID, was, is)
			}
		}
		if p.SubnetType != nil {
			want, known := p.SubnetType.Record()
			if !known || want != rec.SubnetType {
				return nil, refuse("assertion `left == right` failed: the subnet_type of subnet %s cannot be changed (EXC-408): left: %d, right: %d", p.SubnetID, rec.SubnetType, want)
			}
		}
		if p.Features != nil {
			cur := rec.Features
			if cur == nil {
				cur = &nns.SubnetFeaturesRecord{}
			}
			// Whole, as merge_subnet_record does: what the live features
			// carried beyond the payload's fields is gone.
			rec.ReplaceFeatures(&nns.SubnetFeaturesRecord{
				CanisterSandboxing: p.Features.CanisterSandboxing,
				HTTPRequests:       p.Features.HTTPRequests,
				SevEnabled:         cur.SevEnabled,
			})
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
			// Whole: a part the payload leaves null is reset, as on mainnet.
			rec.ReplaceResourceLimits(&nns.ResourceLimitsRecord{
				MaximumStateSize:            p.ResourceLimits.MaximumStateSize,
				MaximumStateDelta:           p.ResourceLimits.MaximumStateDelta,
				MaximumQueryInstructions:    p.ResourceLimits.MaximumQueryInstructions,
				MaximumQueryWalltimeSeconds: p.ResourceLimits.MaximumQueryWalltimeSeconds,
			})
		}
		return []Mutation{{Key: nns.SubnetRecordKey(p.SubnetID.String()), Value: rec.Marshal()}}, nil
	})
}

// RemoveNodes runs remove_nodes as the canister does: the node ids are
// sorted and de-duplicated, then for each in turn a node with no record is
// skipped (another proposal may have removed it first), a node in a subnet
// refuses the whole proposal, and so does a node whose operator has no
// record; each removed node gives its operator one allowance back.
func (r *Registry) RemoveNodes(p nns.RemoveNodesPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
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
				continue
			}
			op, err := principal.FromBytes(rec.NodeOperatorID)
			if err != nil {
				return nil, refuse("do_remove_nodes: Aborting node removal: node %s has no valid node operator id", n)
			}
			if s, in, err := v.subnetOf(n); err != nil {
				return nil, err
			} else if in {
				return nil, refuse("do_remove_nodes: Cannot remove a node that is a member of a subnet. This node is a member of Subnet: %s", nns.SubnetRecordKey(s.String()))
			}
			o := allowance[op]
			if o == nil {
				cur, ok, err := v.operator(op)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, refuse("do_remove_nodes: Aborting node removal: Node Operator Id %s not found in the registry.", nns.NodeOperatorRecordKey(op.String()))
				}
				o = &cur
				allowance[op] = o
			}
			o.NodeAllowance++
			muts = append(muts, Mutation{Key: nns.NodeRecordKey(n.String()), Delete: true})
		}
		for _, op := range sortedOps(allowance) {
			muts = append(muts, Mutation{Key: nns.NodeOperatorRecordKey(op.String()), Value: allowance[op].Marshal()})
		}
		return muts, nil
	})
}

// RemoveNodeOperators runs remove_node_operators: naming operators in both
// fields traps (when node_operator_principals_to_remove is set the older
// byte-string list must be empty; alone, its ids that do not decode are
// dropped); then it deletes the named operators' records, silently
// skipping one that has no record or still owns nodes, exactly as the
// registry does (so preflight must catch the latter).
func (r *Registry) RemoveNodeOperators(p nns.RemoveNodeOperatorsPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		var ops []principal.Principal
		switch {
		case p.NodeOperatorPrincipalsToRemove != nil && len(p.NodeOperatorsToRemove) > 0:
			return nil, refuse("Cannot specify both node_operators_to_remove and node_operator_principals_to_remove")
		case p.NodeOperatorPrincipalsToRemove != nil:
			ops = p.NodeOperatorPrincipalsToRemove.Principals
		default:
			for _, raw := range p.NodeOperatorsToRemove {
				if op, err := principal.FromBytes(raw); err == nil {
					ops = append(ops, op)
				}
			}
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
	v := view{r: r}
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

// AssignNoid runs add_node_operator (NNS_FUNCTION_ASSIGN_NOID): the record is inserted with the
// payload's fields, dc_id lower-cased and max_rewardable_nodes empty when
// null (AddNodeOperatorPayload's Into<NodeOperatorRecord>; not stored here); an operator
// that has a record already refuses the insert. Governance, not the
// registry, refuses a provider it does not know, before the proposal is
// made.
func (r *Registry) AssignNoid(p nns.AddNodeOperatorPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		if p.NodeOperatorPrincipalID == nil || p.NodeProviderPrincipalID == nil {
			return nil, refuse("called `Option::unwrap()` on a `None` value")
		}
		op := *p.NodeOperatorPrincipalID
		if _, ok := v.get(nns.NodeOperatorRecordKey(op.String())); ok {
			return nil, refuse("Key already present: %s", nns.NodeOperatorRecordKey(op.String()))
		}
		rec := nns.NodeOperatorRecordPB{
			NodeOperatorPrincipalID: op.Bytes(),
			NodeAllowance:           p.NodeAllowance,
			NodeProviderPrincipalID: p.NodeProviderPrincipalID.Bytes(),
			DcID:                    strings.ToLower(p.DcID),
			RewardableNodes:         nns.CountsMap(p.RewardableNodes),
			IPv6:                    p.IPv6,
		}
		// max_rewardable_nodes is not stored: its field number in
		// NodeOperatorRecord is in no revision alp has read
		// (docs/decisions.md), so the local record cannot carry it.
		return []Mutation{{Key: nns.NodeOperatorRecordKey(op.String()), Value: rec.Marshal()}}, nil
	})
}

// UpdateNodeOperatorConfig runs update_node_operator_config in the
// canister's order: the record must exist; then each field the payload
// sets replaces the record's and a null one leaves it (rewardable_nodes
// and max_rewardable_nodes: an empty map leaves it, a non-empty one
// replaces the whole map); a provider equal to the operator traps, an
// ipv6 not of check_ipv6_format traps, and set_ipv6_to_none clears ipv6
// after it is set.
func (r *Registry) UpdateNodeOperatorConfig(p nns.UpdateNodeOperatorConfigPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		if p.NodeOperatorID == nil {
			return nil, refuse("called `Option::unwrap()` on a `None` value")
		}
		op := *p.NodeOperatorID
		rec, ok, err := v.operator(op)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, refuse("Node Operator record with ID %s not found in the registry.", op)
		}
		if p.NodeAllowance != nil {
			rec.NodeAllowance = *p.NodeAllowance
		}
		if p.DcID != nil {
			rec.DcID = *p.DcID
		}
		if len(p.RewardableNodes) > 0 {
			rec.RewardableNodes = nns.CountsMap(p.RewardableNodes)
		}
		if p.NodeProviderID != nil {
			if *p.NodeProviderID == op {
				return nil, refuse("The Node Operator ID cannot be the same as the Node Provider ID: %s", op)
			}
			rec.NodeProviderPrincipalID = p.NodeProviderID.Bytes()
		}
		if p.IPv6 != nil {
			if !nns.IPv6FormatOK(*p.IPv6) {
				return nil, refuse("New Ipv6 field %s does not conform to the required format", *p.IPv6)
			}
			ip := *p.IPv6
			rec.IPv6 = &ip
		}
		if p.SetIPv6ToNone != nil && *p.SetIPv6ToNone {
			rec.IPv6 = nil
		}
		return []Mutation{{Key: nns.NodeOperatorRecordKey(op.String()), Value: rec.Marshal()}}, nil
	})
}

// DeployHostosToSomeNodes runs deploy_hostos_to_some_nodes: each node,
// in the payload's order, must have a record, whose hostos_version_id
// becomes the payload's (null clears it); then the HostOS invariant holds:
// every version a node names has its hostos_version_<id> record.
func (r *Registry) DeployHostosToSomeNodes(p nns.DeployHostosToSomeNodesPayload) error {
	return r.mutate(func(v view) ([]Mutation, error) {
		var muts []Mutation
		for _, n := range p.NodeIDs {
			rec, ok, err := v.node(n)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, refuse("node record for %s not found in the registry.", n)
			}
			if p.HostosVersionID != nil {
				id := *p.HostosVersionID
				rec.HostosVersionID = &id
			} else {
				rec.HostosVersionID = nil
			}
			muts = append(muts, Mutation{Key: nns.NodeRecordKey(n.String()), Value: rec.Marshal()})
		}
		if id := p.HostosVersionID; id != nil && len(muts) > 0 {
			if _, ok := v.get(nns.HostosVersionRecordKey(*id)); !ok {
				return nil, refuse("Could not find HostOS version: %s", *id)
			}
		}
		return muts, nil
	})
}
