package registry

import (
	"fmt"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// maxSSHKeys bounds each of a subnet's SSH access lists (MAX_NUM_SSH_KEYS
// upstream).
const maxSSHKeys = 50

// mutate runs a proposal's mutation as the canister does: f makes the
// mutations, refusing in the canister's order, then the registry's
// invariants are checked on the state those mutations leave
// (check_global_state_invariants, before anything is applied), and only
// then are they applied, all at one new version.
func (r *Registry) mutate(f func(v view) ([]Mutation, error)) error {
	return r.update(func(v view) ([]Mutation, error) {
		muts, err := f(v)
		if err != nil {
			return nil, err
		}
		if err := v.after(muts).checkSubnetInvariants(muts); err != nil {
			return nil, err
		}
		return muts, nil
	})
}

// checkSubnetInvariants checks the subnet invariants of
// rs/registry/canister/src/invariants/subnet.rs on the subnet records muts
// write, in subnet_list order and, within a subnet, in the canister's order:
// the SSH access lists hold at most 50 keys each, every member is a
// registered node, no member is repeated, the subnet has a member, a
// SEV-enabled subnet's members all have a chip id, and only a rented
// subnet (application, free cost schedule) or a cloud engine has subnet
// admins. The canister checks every subnet; this checks the ones the
// proposal writes, so a seeded state that already breaks a rule (a fleet
// file describing drift) fails only the proposals that touch it.
// Invariants the canister reports as an error read "invariant check failed
// with message: …"; the ones it asserts read as the bare panic.
func (v view) checkSubnetInvariants(muts []Mutation) error {
	written := map[string]bool{}
	for _, m := range muts {
		if !m.Delete && strings.HasPrefix(m.Key, nns.SubnetRecordKey("")) {
			written[m.Key] = true
		}
	}
	if len(written) == 0 {
		return nil
	}
	// Like the canister, walk subnet_list: a record it does not name is
	// not checked (the canister's check of that is commented out).
	order, _, err := v.subnetList()
	if err != nil {
		return err
	}
	for _, s := range order {
		if !written[nns.SubnetRecordKey(s.String())] {
			continue
		}
		rec, ok, err := v.subnet(s)
		if err != nil {
			return err
		}
		if !ok {
			return refuse("Subnet %s is in subnet list but no record exists", s)
		}
		if err := v.subnetInvariants(s, rec); err != nil {
			return err
		}
	}
	return nil
}

func (v view) subnetInvariants(s principal.Principal, rec nns.SubnetRecordPB) error {
	failed := func(format string, args ...any) error {
		return refuse("invariant check failed with message: "+format, args...)
	}
	if len(rec.SSHReadonlyAccess) > maxSSHKeys || len(rec.SSHBackupAccess) > maxSSHKeys {
		return failed("Mutation would have resulted in an SSH key access list that is too long, the maximum allowable length is %d, and the `readonly` and `backup` lists had %d and %d keys, respectively", maxSSHKeys, len(rec.SSHReadonlyAccess), len(rec.SSHBackupAccess))
	}
	seen := map[string]bool{}
	var missingChip []string
	engineNodesOK := true
	cloudEngine := rec.SubnetType == nns.SubnetTypeCloudEngine
	for _, m := range rec.Membership {
		id, err := principal.FromBytes(m)
		if err != nil {
			return refuse("subnet %s: a member id does not decode: %v", s, err)
		}
		node, ok, err := v.node(id)
		if err != nil {
			return err
		}
		if !ok {
			return failed("Node %s does not exist in the registry", id)
		}
		if nns.IsCloudEngineNode(node.RewardType) != cloudEngine {
			engineNodesOK = false
		}
		if node.ChipID == nil && !seen[string(m)] {
			missingChip = append(missingChip, id.String())
		}
		seen[string(m)] = true
	}
	if len(seen) < len(rec.Membership) {
		return refuse("Repeated nodes in subnet %s", s)
	}
	if len(seen) == 0 {
		return refuse("No node in subnet %s", s)
	}
	// check_node_type4_iff_cloud_engine, before the SEV check as upstream.
	if !engineNodesOK {
		if cloudEngine {
			return failed("Subnet %s is a cloud engine subnet but some nodes do not have reward type 4", s)
		}
		return failed("Subnet %s is not a cloud engine subnet but some nodes have reward type 4", s)
	}
	if rec.Features != nil && boolOr(rec.Features.SevEnabled) && len(missingChip) > 0 {
		return failed("Subnet %s is SEV-enabled, but the following nodes are missing a chip ID: [%s]", s, strings.Join(missingChip, ", "))
	}
	free := rec.CanisterCyclesCostSchedule == nns.CostScheduleFree
	rented := free && rec.SubnetType == nns.SubnetTypeApplication
	engine := free && rec.SubnetType == nns.SubnetTypeCloudEngine
	if len(rec.SubnetAdmins) > 0 && !rented && !engine {
		return failed("Subnet %s is not a rented or cloud engine subnet but has a non-empty subnet admins list", s)
	}
	return nil
}

// subnetList is the subnet_list record's subnets, in its order; ok is
// false when there is no such record.
func (v view) subnetList() ([]principal.Principal, bool, error) {
	raw, ok := v.get(nns.SubnetListKey)
	if !ok {
		return nil, false, nil
	}
	var list nns.SubnetListRecordPB
	if err := list.Unmarshal(raw); err != nil {
		return nil, false, fmt.Errorf("decode %s: %w", nns.SubnetListKey, err)
	}
	out := make([]principal.Principal, 0, len(list.Subnets))
	for _, b := range list.Subnets {
		id, err := principal.FromBytes(b)
		if err != nil {
			return nil, false, fmt.Errorf("decode %s: a subnet id: %w", nns.SubnetListKey, err)
		}
		out = append(out, id)
	}
	return out, true, nil
}
