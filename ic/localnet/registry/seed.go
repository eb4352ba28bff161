package registry

import (
	"fmt"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Seeding writes the starting state of a local network. Unlike proposal
// mutations these check only what keeps the store consistent (references
// resolve, no node in two subnets), because a fleet file describes a state
// that already exists, drift included.

// DataCenter is a data center to seed.
type DataCenter struct {
	ID, Region, Owner string
	Gps               *nns.Gps
}

// NodeOperator is a node operator to seed.
type NodeOperator struct {
	ID, Provider  principal.Principal
	DataCenter    string
	NodeAllowance uint64
	IPv6          string
}

// Node is a node to seed.
type Node struct {
	ID, Operator principal.Principal
	IPv6         string
	HTTPPort     uint32
	ChipID       []byte
	// RewardType is the record's node_reward_type; nil: absent.
	RewardType *int32
	// HostOS is the record's hostos_version_id; "": unset.
	HostOS string
}

// Subnet is a subnet to seed.
type Subnet struct {
	ID             principal.Principal
	Type           int32 // nns.SubnetType*
	ReplicaVersion string
	Members        []principal.Principal
	SevEnabled     *bool
	CostSchedule   int32
	Admins         []principal.Principal
	SSHReadonly    []string
	IsHalted       bool
	MaxCanisters   uint64
	HTTPRequests   bool
	ResourceLimits *nns.ResourceLimitsRecord
}

// AddDataCenter writes a data center record.
func (r *Registry) AddDataCenter(dc DataCenter) uint64 {
	rec := nns.DataCenterRecordPB{ID: dc.ID, Region: dc.Region, Owner: dc.Owner, Gps: dc.Gps}
	return r.Apply([]Mutation{{Key: nns.DataCenterRecordKey(dc.ID), Value: rec.Marshal()}})
}

// AddNodeOperator writes a node operator record.
func (r *Registry) AddNodeOperator(op NodeOperator) uint64 {
	rec := nns.NodeOperatorRecordPB{
		NodeOperatorPrincipalID: op.ID.Bytes(),
		NodeAllowance:           op.NodeAllowance,
		NodeProviderPrincipalID: op.Provider.Bytes(),
		DcID:                    op.DataCenter,
	}
	if op.IPv6 != "" {
		ip := op.IPv6
		rec.IPv6 = &ip
	}
	return r.Apply([]Mutation{{Key: nns.NodeOperatorRecordKey(op.ID.String()), Value: rec.Marshal()}})
}

// AddNode writes a node record; its operator must exist.
func (r *Registry) AddNode(n Node) (uint64, error) {
	var version uint64
	err := r.update(func(v view) ([]Mutation, error) {
		if _, ok, err := v.operator(n.Operator); err != nil || !ok {
			return nil, fmt.Errorf("node %s: operator %s has no record", n.ID, n.Operator)
		}
		port := n.HTTPPort
		if port == 0 {
			port = 8080
		}
		rec := nns.NodeRecordPB{
			HTTP:           &nns.ConnectionEndpoint{IPAddr: n.IPv6, Port: port},
			Xnet:           &nns.ConnectionEndpoint{IPAddr: n.IPv6, Port: 2497},
			NodeOperatorID: n.Operator.Bytes(),
			ChipID:         n.ChipID,
			RewardType:     n.RewardType,
		}
		if n.HostOS != "" {
			h := n.HostOS
			rec.HostosVersionID = &h
		}
		version = v.r.version + 1
		return []Mutation{{Key: nns.NodeRecordKey(n.ID.String()), Value: rec.Marshal()}}, nil
	})
	return version, err
}

// AddSubnet writes a subnet record and adds it to subnet_list; every member
// must be a registered node in no other subnet.
func (r *Registry) AddSubnet(s Subnet) (uint64, error) {
	var version uint64
	err := r.update(func(v view) ([]Mutation, error) {
		var members [][]byte
		for _, m := range s.Members {
			if _, ok, err := v.node(m); err != nil || !ok {
				return nil, fmt.Errorf("subnet %s: member %s is not a registered node", s.ID, m)
			}
			if other, ok, err := v.subnetOf(m); err != nil || ok {
				return nil, fmt.Errorf("subnet %s: node %s is already a member of subnet %s", s.ID, m, other)
			}
			members = append(members, m.Bytes())
		}
		typ := s.Type
		if typ == nns.SubnetTypeUnspecified {
			typ = nns.SubnetTypeApplication
		}
		rec := nns.SubnetRecordPB{
			Membership:                 members,
			MaxIngressBytesPerMessage:  2 << 20,
			UnitDelayMillis:            1000,
			InitialNotaryDelayMillis:   600,
			ReplicaVersionID:           s.ReplicaVersion,
			DkgIntervalLength:          499,
			SubnetType:                 typ,
			DkgDealingsPerBlock:        1,
			IsHalted:                   s.IsHalted,
			MaxIngressMessagesPerBlock: 1000,
			MaxBlockPayloadSize:        4 << 20,
			Features:                   &nns.SubnetFeaturesRecord{CanisterSandboxing: false, HTTPRequests: s.HTTPRequests, SevEnabled: s.SevEnabled},
			MaxNumberOfCanisters:       s.MaxCanisters,
			SSHReadonlyAccess:          s.SSHReadonly,
			CanisterCyclesCostSchedule: s.CostSchedule,
			ResourceLimits:             s.ResourceLimits,
		}
		for _, a := range s.Admins {
			rec.SubnetAdmins = append(rec.SubnetAdmins, a.Bytes())
		}
		var list nns.SubnetListRecordPB
		if b, ok := v.get(nns.SubnetListKey); ok {
			if err := list.Unmarshal(b); err != nil {
				return nil, fmt.Errorf("decode subnet_list: %w", err)
			}
		}
		list.Subnets = append(list.Subnets, s.ID.Bytes())
		version = v.r.version + 1
		return []Mutation{
			{Key: nns.SubnetRecordKey(s.ID.String()), Value: rec.Marshal()},
			{Key: nns.SubnetListKey, Value: list.Marshal()},
		}, nil
	})
	return version, err
}

// ElectVersion writes replica_version_<id> and adds id to
// blessed_replica_versions, which is what an executed
// ReviseElectedGuestosVersions proposal does.
func (r *Registry) ElectVersion(id string, rec nns.ReplicaVersionRecordPB) uint64 {
	var version uint64
	_ = r.update(func(v view) ([]Mutation, error) {
		blessed, err := v.blessed()
		if err != nil {
			return nil, err
		}
		if !contains(blessed.BlessedVersionIDs, id) {
			blessed.BlessedVersionIDs = append(blessed.BlessedVersionIDs, id)
		}
		version = v.r.version + 1
		return []Mutation{
			{Key: nns.ReplicaVersionRecordKey(id), Value: rec.Marshal()},
			{Key: nns.BlessedReplicaVersionsKey, Value: blessed.Marshal()},
		}, nil
	})
	return version
}

// UnelectVersion deletes replica_version_<id> and drops it from the blessed
// list. It refuses a version a subnet still runs, as the registry does.
func (r *Registry) UnelectVersion(id string) error {
	return r.update(func(v view) ([]Mutation, error) {
		for _, s := range v.ids("subnet_record_") {
			rec, _, err := v.subnet(s)
			if err != nil {
				return nil, err
			}
			if rec.ReplicaVersionID == id {
				return nil, fmt.Errorf("cannot unelect replica version %s: subnet %s runs it", id, s)
			}
		}
		blessed, err := v.blessed()
		if err != nil {
			return nil, err
		}
		var keep []string
		for _, b := range blessed.BlessedVersionIDs {
			if b != id {
				keep = append(keep, b)
			}
		}
		blessed.BlessedVersionIDs = keep
		return []Mutation{
			{Key: nns.ReplicaVersionRecordKey(id), Delete: true},
			{Key: nns.BlessedReplicaVersionsKey, Value: blessed.Marshal()},
		}, nil
	})
}

func (v view) blessed() (nns.BlessedReplicaVersionsPB, error) {
	var b nns.BlessedReplicaVersionsPB
	if raw, ok := v.get(nns.BlessedReplicaVersionsKey); ok {
		if err := b.Unmarshal(raw); err != nil {
			return b, fmt.Errorf("decode blessed_replica_versions: %w", err)
		}
	}
	return b, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
