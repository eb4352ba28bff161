package nns

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"alpnib.dev/ic/nns/registrypb"
)

// Each record type in records.go is a view of its generated message in
// registrypb: Unmarshal decodes with google.golang.org/protobuf and copies the
// fields the view names; what the view does not name (newer fields, fields
// alp never reads, unknown ones) stays in rest, the encoding of the rest of
// the message, and Marshal writes it back. So a record read from a live
// registry and re-encoded (localnet's mutations, the dry run's seed) loses
// nothing.

var deterministic = proto.MarshalOptions{Deterministic: true}

// decode unmarshals b into m.
func decode(b []byte, m proto.Message) error {
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("decode %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// restOf encodes what is left of m once the view took its fields: nil when
// nothing is, so a view built in Go and a decoded one compare equal.
func restOf(m proto.Message) []byte {
	b, err := deterministic.Marshal(m)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}

// encode starts m from rest, lets fill set the view's fields, and encodes it
// deterministically (map entries in key order), so equal records have equal
// bytes.
func encode[M proto.Message](rest []byte, m M, fill func(M)) []byte {
	if len(rest) > 0 {
		// rest was produced by restOf from a message of this type.
		_ = proto.Unmarshal(rest, m)
	}
	fill(m)
	b, err := deterministic.Marshal(m)
	if err != nil {
		// Only invalid UTF-8 in a string field gets here; the view's strings
		// come from decoded records or Go literals.
		panic(fmt.Sprintf("encode %s: %v", m.ProtoReflect().Descriptor().FullName(), err))
	}
	return b
}

// unknownOnly returns a message of m's type holding only m's unknown fields,
// or nil when m is nil or has none: what a view keeps of a nested message
// once it has copied the named fields out.
func unknownOnly[M proto.Message](m M) M {
	var none M
	if !m.ProtoReflect().IsValid() || len(m.ProtoReflect().GetUnknown()) == 0 {
		return none
	}
	out := m.ProtoReflect().New()
	out.SetUnknown(m.ProtoReflect().GetUnknown())
	return out.Interface().(M)
}

// orNew is cur when rest brought one (with unknown fields), else a new M.
func orNew[M proto.Message](cur M) M {
	if cur.ProtoReflect().IsValid() {
		return cur
	}
	return cur.ProtoReflect().Type().New().Interface().(M)
}

// Marshal encodes the subnet record.
func (r *SubnetRecordPB) Marshal() []byte {
	return encode(r.rest, &registrypb.SubnetRecord{}, func(m *registrypb.SubnetRecord) {
		m.Membership = r.Membership
		m.MaxIngressBytesPerMessage = r.MaxIngressBytesPerMessage
		m.UnitDelayMillis = r.UnitDelayMillis
		m.InitialNotaryDelayMillis = r.InitialNotaryDelayMillis
		m.ReplicaVersionId = r.ReplicaVersionID
		m.DkgIntervalLength = r.DkgIntervalLength
		m.StartAsNns = r.StartAsNns
		m.SubnetType = registrypb.SubnetType(r.SubnetType)
		m.DkgDealingsPerBlock = r.DkgDealingsPerBlock
		m.IsHalted = r.IsHalted
		m.MaxIngressMessagesPerBlock = r.MaxIngressMessagesPerBlock
		m.MaxBlockPayloadSize = r.MaxBlockPayloadSize
		if f := r.Features; f != nil {
			m.Features = orNew(m.Features)
			m.Features.CanisterSandboxing, m.Features.HttpRequests, m.Features.SevEnabled = f.CanisterSandboxing, f.HTTPRequests, f.SevEnabled
		} else {
			m.Features = nil
		}
		m.MaxNumberOfCanisters = r.MaxNumberOfCanisters
		m.SshReadonlyAccess = r.SSHReadonlyAccess
		m.SshBackupAccess = r.SSHBackupAccess
		m.HaltAtCupHeight = r.HaltAtCupHeight
		m.CanisterCyclesCostSchedule = registrypb.CanisterCyclesCostSchedule(r.CanisterCyclesCostSchedule)
		m.SubnetAdmins = nil
		for _, a := range r.SubnetAdmins {
			m.SubnetAdmins = append(m.SubnetAdmins, &registrypb.PrincipalId{Raw: a})
		}
		m.MaxIngressBytesPerBlock = r.MaxIngressBytesPerBlock
		m.RecalledReplicaVersionIds = r.RecalledReplicaVersionIDs
		if l := r.ResourceLimits; l != nil {
			m.ResourceLimits = orNew(m.ResourceLimits)
			m.ResourceLimits.MaximumStateSize, m.ResourceLimits.MaximumStateDelta = l.MaximumStateSize, l.MaximumStateDelta
			m.ResourceLimits.MaximumQueryInstructions, m.ResourceLimits.MaximumQueryWalltimeSeconds = l.MaximumQueryInstructions, l.MaximumQueryWalltimeSeconds
		} else {
			m.ResourceLimits = nil
		}
	})
}

// Unmarshal decodes a subnet record.
func (r *SubnetRecordPB) Unmarshal(b []byte) error {
	*r = SubnetRecordPB{}
	var m registrypb.SubnetRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = SubnetRecordPB{
		Membership:                 m.Membership,
		MaxIngressBytesPerMessage:  m.MaxIngressBytesPerMessage,
		UnitDelayMillis:            m.UnitDelayMillis,
		InitialNotaryDelayMillis:   m.InitialNotaryDelayMillis,
		ReplicaVersionID:           m.ReplicaVersionId,
		DkgIntervalLength:          m.DkgIntervalLength,
		StartAsNns:                 m.StartAsNns,
		SubnetType:                 int32(m.SubnetType),
		DkgDealingsPerBlock:        m.DkgDealingsPerBlock,
		IsHalted:                   m.IsHalted,
		MaxIngressMessagesPerBlock: m.MaxIngressMessagesPerBlock,
		MaxBlockPayloadSize:        m.MaxBlockPayloadSize,
		MaxNumberOfCanisters:       m.MaxNumberOfCanisters,
		SSHReadonlyAccess:          m.SshReadonlyAccess,
		SSHBackupAccess:            m.SshBackupAccess,
		HaltAtCupHeight:            m.HaltAtCupHeight,
		CanisterCyclesCostSchedule: int32(m.CanisterCyclesCostSchedule),
		MaxIngressBytesPerBlock:    m.MaxIngressBytesPerBlock,
		RecalledReplicaVersionIDs:  m.RecalledReplicaVersionIds,
	}
	if f := m.Features; f != nil {
		r.Features = &SubnetFeaturesRecord{CanisterSandboxing: f.CanisterSandboxing, HTTPRequests: f.HttpRequests, SevEnabled: f.SevEnabled}
	}
	for _, a := range m.SubnetAdmins {
		r.SubnetAdmins = append(r.SubnetAdmins, a.GetRaw())
	}
	if l := m.ResourceLimits; l != nil {
		r.ResourceLimits = &ResourceLimitsRecord{MaximumStateSize: l.MaximumStateSize, MaximumStateDelta: l.MaximumStateDelta,
			MaximumQueryInstructions: l.MaximumQueryInstructions, MaximumQueryWalltimeSeconds: l.MaximumQueryWalltimeSeconds}
	}
	m.Membership, m.MaxIngressBytesPerMessage, m.UnitDelayMillis, m.InitialNotaryDelayMillis = nil, 0, 0, 0
	m.ReplicaVersionId, m.DkgIntervalLength, m.StartAsNns, m.SubnetType = "", 0, false, 0
	m.DkgDealingsPerBlock, m.IsHalted, m.MaxIngressMessagesPerBlock, m.MaxBlockPayloadSize = 0, false, 0, 0
	m.MaxNumberOfCanisters, m.SshReadonlyAccess, m.SshBackupAccess, m.HaltAtCupHeight = 0, nil, nil, false
	m.CanisterCyclesCostSchedule, m.SubnetAdmins, m.MaxIngressBytesPerBlock = 0, nil, 0
	m.RecalledReplicaVersionIds = nil
	m.Features, m.ResourceLimits = unknownOnly(m.Features), unknownOnly(m.ResourceLimits)
	r.rest = restOf(&m)
	return nil
}

// endpointPB sets the view's endpoint on cur (kept from rest), or clears it.
func endpointPB(cur *registrypb.ConnectionEndpoint, c *ConnectionEndpoint) *registrypb.ConnectionEndpoint {
	if c == nil {
		return nil
	}
	cur = orNew(cur)
	cur.IpAddr, cur.Port = c.IPAddr, c.Port
	return cur
}

func endpointOf(c *registrypb.ConnectionEndpoint) *ConnectionEndpoint {
	if c == nil {
		return nil
	}
	return &ConnectionEndpoint{IPAddr: c.IpAddr, Port: c.Port}
}

// Marshal encodes the node record.
func (r *NodeRecordPB) Marshal() []byte {
	return encode(r.rest, &registrypb.NodeRecord{}, func(m *registrypb.NodeRecord) {
		m.Xnet, m.Http = endpointPB(m.Xnet, r.Xnet), endpointPB(m.Http, r.HTTP)
		m.NodeOperatorId = r.NodeOperatorID
		m.ChipId = r.ChipID
		m.HostosVersionId = r.HostosVersionID
		m.NodeRewardType = (*registrypb.NodeRewardType)(r.RewardType)
	})
}

// Unmarshal decodes a node record.
func (r *NodeRecordPB) Unmarshal(b []byte) error {
	*r = NodeRecordPB{}
	var m registrypb.NodeRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = NodeRecordPB{Xnet: endpointOf(m.Xnet), HTTP: endpointOf(m.Http), NodeOperatorID: m.NodeOperatorId, ChipID: m.ChipId,
		HostosVersionID: m.HostosVersionId, RewardType: (*int32)(m.NodeRewardType)}
	m.Xnet, m.Http, m.NodeOperatorId, m.ChipId, m.HostosVersionId, m.NodeRewardType = unknownOnly(m.Xnet), unknownOnly(m.Http), nil, nil, nil, nil
	r.rest = restOf(&m)
	return nil
}

// Marshal encodes the node operator record.
func (r *NodeOperatorRecordPB) Marshal() []byte {
	return encode(r.rest, &registrypb.NodeOperatorRecord{}, func(m *registrypb.NodeOperatorRecord) {
		m.NodeOperatorPrincipalId = r.NodeOperatorPrincipalID
		m.NodeAllowance = r.NodeAllowance
		m.NodeProviderPrincipalId = r.NodeProviderPrincipalID
		m.DcId = r.DcID
		m.RewardableNodes = r.RewardableNodes
		m.Ipv6 = r.IPv6
	})
}

// Unmarshal decodes a node operator record.
func (r *NodeOperatorRecordPB) Unmarshal(b []byte) error {
	*r = NodeOperatorRecordPB{}
	var m registrypb.NodeOperatorRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = NodeOperatorRecordPB{
		NodeOperatorPrincipalID: m.NodeOperatorPrincipalId, NodeAllowance: m.NodeAllowance,
		NodeProviderPrincipalID: m.NodeProviderPrincipalId, DcID: m.DcId, RewardableNodes: m.RewardableNodes, IPv6: m.Ipv6,
	}
	m.NodeOperatorPrincipalId, m.NodeAllowance, m.NodeProviderPrincipalId = nil, 0, nil
	m.DcId, m.RewardableNodes, m.Ipv6 = "", nil, nil
	r.rest = restOf(&m)
	return nil
}

// Marshal encodes the data center record.
func (r *DataCenterRecordPB) Marshal() []byte {
	return encode(r.rest, &registrypb.DataCenterRecord{}, func(m *registrypb.DataCenterRecord) {
		m.Id, m.Region, m.Owner = r.ID, r.Region, r.Owner
		if r.Gps != nil {
			m.Gps = orNew(m.Gps)
			m.Gps.Latitude, m.Gps.Longitude = r.Gps.Latitude, r.Gps.Longitude
		} else {
			m.Gps = nil
		}
	})
}

// Unmarshal decodes a data center record.
func (r *DataCenterRecordPB) Unmarshal(b []byte) error {
	*r = DataCenterRecordPB{}
	var m registrypb.DataCenterRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = DataCenterRecordPB{ID: m.Id, Region: m.Region, Owner: m.Owner}
	if g := m.Gps; g != nil {
		r.Gps = &Gps{Latitude: g.Latitude, Longitude: g.Longitude}
	}
	m.Id, m.Region, m.Owner, m.Gps = "", "", "", unknownOnly(m.Gps)
	r.rest = restOf(&m)
	return nil
}

// Marshal encodes the replica version record.
func (r *ReplicaVersionRecordPB) Marshal() []byte {
	return encode(r.rest, &registrypb.ReplicaVersionRecord{}, func(m *registrypb.ReplicaVersionRecord) {
		m.ReleasePackageSha256Hex = r.ReleasePackageSha256Hex
		m.ReleasePackageUrls = r.ReleasePackageURLs
	})
}

// Unmarshal decodes a replica version record.
func (r *ReplicaVersionRecordPB) Unmarshal(b []byte) error {
	*r = ReplicaVersionRecordPB{}
	var m registrypb.ReplicaVersionRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = ReplicaVersionRecordPB{ReleasePackageSha256Hex: m.ReleasePackageSha256Hex, ReleasePackageURLs: m.ReleasePackageUrls}
	m.ReleasePackageSha256Hex, m.ReleasePackageUrls = "", nil
	r.rest = restOf(&m)
	return nil
}

// Marshal encodes the blessed-versions list.
func (r *BlessedReplicaVersionsPB) Marshal() []byte {
	return encode(nil, &registrypb.BlessedReplicaVersions{}, func(m *registrypb.BlessedReplicaVersions) {
		m.BlessedVersionIds = r.BlessedVersionIDs
	})
}

// Unmarshal decodes the blessed-versions list.
func (r *BlessedReplicaVersionsPB) Unmarshal(b []byte) error {
	*r = BlessedReplicaVersionsPB{}
	var m registrypb.BlessedReplicaVersions
	if err := decode(b, &m); err != nil {
		return err
	}
	r.BlessedVersionIDs = m.BlessedVersionIds
	return nil
}

// Marshal encodes the subnet list.
func (r *SubnetListRecordPB) Marshal() []byte {
	return encode(nil, &registrypb.SubnetListRecord{}, func(m *registrypb.SubnetListRecord) { m.Subnets = r.Subnets })
}

// Unmarshal decodes the subnet list.
func (r *SubnetListRecordPB) Unmarshal(b []byte) error {
	*r = SubnetListRecordPB{}
	var m registrypb.SubnetListRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	r.Subnets = m.Subnets
	return nil
}
