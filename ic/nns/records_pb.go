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
		m.Features = nil
		if f := r.Features; f != nil {
			m.Features = &registrypb.SubnetFeatures{CanisterSandboxing: f.CanisterSandboxing, HttpRequests: f.HTTPRequests, SevEnabled: f.SevEnabled}
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
		m.ResourceLimits = nil
		if l := r.ResourceLimits; l != nil {
			m.ResourceLimits = &registrypb.ResourceLimits{MaximumStateSize: l.MaximumStateSize, MaximumStateDelta: l.MaximumStateDelta}
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
		// The view names every field of SubnetFeatures but unknown ones.
		if len(f.ProtoReflect().GetUnknown()) > 0 {
			m.Features = &registrypb.SubnetFeatures{}
			m.Features.ProtoReflect().SetUnknown(f.ProtoReflect().GetUnknown())
		} else {
			m.Features = nil
		}
	}
	for _, a := range m.SubnetAdmins {
		r.SubnetAdmins = append(r.SubnetAdmins, a.GetRaw())
	}
	if l := m.ResourceLimits; l != nil {
		r.ResourceLimits = &ResourceLimitsRecord{MaximumStateSize: l.MaximumStateSize, MaximumStateDelta: l.MaximumStateDelta}
	}
	m.Membership, m.MaxIngressBytesPerMessage, m.UnitDelayMillis, m.InitialNotaryDelayMillis = nil, 0, 0, 0
	m.ReplicaVersionId, m.DkgIntervalLength, m.StartAsNns, m.SubnetType = "", 0, false, 0
	m.DkgDealingsPerBlock, m.IsHalted, m.MaxIngressMessagesPerBlock, m.MaxBlockPayloadSize = 0, false, 0, 0
	m.MaxNumberOfCanisters, m.SshReadonlyAccess, m.SshBackupAccess, m.HaltAtCupHeight = 0, nil, nil, false
	m.CanisterCyclesCostSchedule, m.SubnetAdmins, m.MaxIngressBytesPerBlock = 0, nil, 0
	m.RecalledReplicaVersionIds, m.ResourceLimits = nil, nil
	r.rest = restOf(&m)
	return nil
}

func endpointPB(c *ConnectionEndpoint) *registrypb.ConnectionEndpoint {
	if c == nil {
		return nil
	}
	return &registrypb.ConnectionEndpoint{IpAddr: c.IPAddr, Port: c.Port}
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
		m.Xnet, m.Http = endpointPB(r.Xnet), endpointPB(r.HTTP)
		m.NodeOperatorId = r.NodeOperatorID
		m.ChipId = r.ChipID
	})
}

// Unmarshal decodes a node record.
func (r *NodeRecordPB) Unmarshal(b []byte) error {
	*r = NodeRecordPB{}
	var m registrypb.NodeRecord
	if err := decode(b, &m); err != nil {
		return err
	}
	*r = NodeRecordPB{Xnet: endpointOf(m.Xnet), HTTP: endpointOf(m.Http), NodeOperatorID: m.NodeOperatorId, ChipID: m.ChipId}
	m.Xnet, m.Http, m.NodeOperatorId, m.ChipId = nil, nil, nil, nil
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
		m.Gps = nil
		if r.Gps != nil {
			m.Gps = &registrypb.Gps{Latitude: r.Gps.Latitude, Longitude: r.Gps.Longitude}
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
	m.Id, m.Region, m.Owner, m.Gps = "", "", "", nil
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
