package nns

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Marshal and Unmarshal of each registry record, by field number.

// Marshal encodes the subnet record.
func (r *SubnetRecordPB) Marshal() []byte {
	var e enc
	for _, m := range r.Membership {
		e.bytesAlways(3, m)
	}
	e.varint(5, r.MaxIngressBytesPerMessage)
	e.varint(7, r.UnitDelayMillis)
	e.varint(8, r.InitialNotaryDelayMillis)
	e.str(9, r.ReplicaVersionID)
	e.varint(10, r.DkgIntervalLength)
	e.boolean(14, r.StartAsNns)
	e.varint(15, uint64(r.SubnetType))
	e.varint(16, r.DkgDealingsPerBlock)
	e.boolean(17, r.IsHalted)
	e.varint(18, r.MaxIngressMessagesPerBlock)
	e.varint(19, r.MaxBlockPayloadSize)
	if f := r.Features; f != nil {
		var fe enc
		fe.boolean(2, f.CanisterSandboxing)
		fe.boolean(3, f.HTTPRequests)
		fe.optBool(9, f.SevEnabled)
		e.bytesAlways(23, fe.b)
	}
	e.varint(24, r.MaxNumberOfCanisters)
	for _, s := range r.SSHReadonlyAccess {
		e.bytesAlways(25, []byte(s))
	}
	for _, s := range r.SSHBackupAccess {
		e.bytesAlways(26, []byte(s))
	}
	e.boolean(28, r.HaltAtCupHeight)
	e.varint(30, uint64(r.CanisterCyclesCostSchedule))
	for _, a := range r.SubnetAdmins {
		var pe enc
		pe.bytes(1, a)
		e.bytesAlways(31, pe.b)
	}
	e.varint(32, r.MaxIngressBytesPerBlock)
	if l := r.ResourceLimits; l != nil {
		var le enc
		le.optVarint(1, l.MaximumStateSize)
		le.optVarint(2, l.MaximumStateDelta)
		e.bytesAlways(34, le.b)
	}
	return e.b
}

// Unmarshal decodes a subnet record.
func (r *SubnetRecordPB) Unmarshal(b []byte) error {
	*r = SubnetRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		u64 := func(dst *uint64) (int, error) {
			v, l, err := getVarint(t, b)
			*dst = v
			return l, err
		}
		flag := func(dst *bool) (int, error) {
			v, l, err := getVarint(t, b)
			*dst = v != 0
			return l, err
		}
		switch n {
		case 3:
			v, l, err := getBytes(t, b)
			r.Membership = append(r.Membership, v)
			return l, err
		case 5:
			return u64(&r.MaxIngressBytesPerMessage)
		case 7:
			return u64(&r.UnitDelayMillis)
		case 8:
			return u64(&r.InitialNotaryDelayMillis)
		case 9:
			v, l, err := getBytes(t, b)
			r.ReplicaVersionID = string(v)
			return l, err
		case 10:
			return u64(&r.DkgIntervalLength)
		case 14:
			return flag(&r.StartAsNns)
		case 15:
			v, l, err := getVarint(t, b)
			r.SubnetType = int32(v)
			return l, err
		case 16:
			return u64(&r.DkgDealingsPerBlock)
		case 17:
			return flag(&r.IsHalted)
		case 18:
			return u64(&r.MaxIngressMessagesPerBlock)
		case 19:
			return u64(&r.MaxBlockPayloadSize)
		case 23:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			f := &SubnetFeaturesRecord{}
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				switch n {
				case 2, 3, 9:
					x, l, err := getVarint(t, b)
					on := x != 0
					switch n {
					case 2:
						f.CanisterSandboxing = on
					case 3:
						f.HTTPRequests = on
					case 9:
						f.SevEnabled = &on
					}
					return l, err
				}
				return -1, nil
			})
			r.Features = f
			return l, err
		case 24:
			return u64(&r.MaxNumberOfCanisters)
		case 25, 26:
			v, l, err := getBytes(t, b)
			if n == 25 {
				r.SSHReadonlyAccess = append(r.SSHReadonlyAccess, string(v))
			} else {
				r.SSHBackupAccess = append(r.SSHBackupAccess, string(v))
			}
			return l, err
		case 28:
			return flag(&r.HaltAtCupHeight)
		case 30:
			v, l, err := getVarint(t, b)
			r.CanisterCyclesCostSchedule = int32(v)
			return l, err
		case 31:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			var raw []byte
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				if n == 1 {
					x, l, err := getBytes(t, b)
					raw = x
					return l, err
				}
				return -1, nil
			})
			r.SubnetAdmins = append(r.SubnetAdmins, raw)
			return l, err
		case 32:
			return u64(&r.MaxIngressBytesPerBlock)
		case 34:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			lim := &ResourceLimitsRecord{}
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				if n == 1 || n == 2 {
					x, l, err := getVarint(t, b)
					if n == 1 {
						lim.MaximumStateSize = &x
					} else {
						lim.MaximumStateDelta = &x
					}
					return l, err
				}
				return -1, nil
			})
			r.ResourceLimits = lim
			return l, err
		}
		return -1, nil
	})
}

func (c *ConnectionEndpoint) marshal() []byte {
	var e enc
	e.str(1, c.IPAddr)
	e.varint(2, uint64(c.Port))
	return e.b
}

func (c *ConnectionEndpoint) unmarshal(b []byte) error {
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1:
			v, l, err := getBytes(t, b)
			c.IPAddr = string(v)
			return l, err
		case 2:
			v, l, err := getVarint(t, b)
			c.Port = uint32(v)
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the node record.
func (r *NodeRecordPB) Marshal() []byte {
	var e enc
	if r.Xnet != nil {
		e.bytesAlways(5, r.Xnet.marshal())
	}
	if r.HTTP != nil {
		e.bytesAlways(6, r.HTTP.marshal())
	}
	e.bytes(15, r.NodeOperatorID)
	if r.ChipID != nil {
		e.bytesAlways(21, r.ChipID)
	}
	return e.b
}

// Unmarshal decodes a node record.
func (r *NodeRecordPB) Unmarshal(b []byte) error {
	*r = NodeRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 5, 6:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			c := &ConnectionEndpoint{}
			if n == 5 {
				r.Xnet = c
			} else {
				r.HTTP = c
			}
			return l, c.unmarshal(v)
		case 15:
			v, l, err := getBytes(t, b)
			r.NodeOperatorID = v
			return l, err
		case 21:
			v, l, err := getBytes(t, b)
			r.ChipID = v
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the node operator record. Map entries are written in key
// order so equal records have equal bytes.
func (r *NodeOperatorRecordPB) Marshal() []byte {
	var e enc
	e.bytes(1, r.NodeOperatorPrincipalID)
	e.varint(2, r.NodeAllowance)
	e.bytes(3, r.NodeProviderPrincipalID)
	for _, k := range sortedKeys(r.RewardableNodes) {
		var me enc
		me.str(1, k)
		me.varint(2, uint64(r.RewardableNodes[k]))
		e.bytesAlways(4, me.b)
	}
	e.str(5, r.DcID)
	if r.IPv6 != nil {
		e.bytesAlways(6, []byte(*r.IPv6))
	}
	return e.b
}

// Unmarshal decodes a node operator record.
func (r *NodeOperatorRecordPB) Unmarshal(b []byte) error {
	*r = NodeOperatorRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1, 3:
			v, l, err := getBytes(t, b)
			if n == 1 {
				r.NodeOperatorPrincipalID = v
			} else {
				r.NodeProviderPrincipalID = v
			}
			return l, err
		case 2:
			v, l, err := getVarint(t, b)
			r.NodeAllowance = v
			return l, err
		case 4:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			var k string
			var c uint32
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				switch n {
				case 1:
					x, l, err := getBytes(t, b)
					k = string(x)
					return l, err
				case 2:
					x, l, err := getVarint(t, b)
					c = uint32(x)
					return l, err
				}
				return -1, nil
			})
			if r.RewardableNodes == nil {
				r.RewardableNodes = map[string]uint32{}
			}
			r.RewardableNodes[k] = c
			return l, err
		case 5:
			v, l, err := getBytes(t, b)
			r.DcID = string(v)
			return l, err
		case 6:
			v, l, err := getBytes(t, b)
			s := string(v)
			r.IPv6 = &s
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the data center record.
func (r *DataCenterRecordPB) Marshal() []byte {
	var e enc
	e.str(1, r.ID)
	e.str(2, r.Region)
	e.str(3, r.Owner)
	if r.Gps != nil {
		var ge enc
		ge.fixed32(1, math.Float32bits(r.Gps.Latitude))
		ge.fixed32(2, math.Float32bits(r.Gps.Longitude))
		e.bytesAlways(4, ge.b)
	}
	return e.b
}

// Unmarshal decodes a data center record.
func (r *DataCenterRecordPB) Unmarshal(b []byte) error {
	*r = DataCenterRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 1, 2, 3:
			v, l, err := getBytes(t, b)
			switch n {
			case 1:
				r.ID = string(v)
			case 2:
				r.Region = string(v)
			case 3:
				r.Owner = string(v)
			}
			return l, err
		case 4:
			v, l, err := getBytes(t, b)
			if err != nil {
				return l, err
			}
			g := &Gps{}
			err = fields(v, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
				if (n == 1 || n == 2) && t == protowire.Fixed32Type {
					x, l := protowire.ConsumeFixed32(b)
					if l < 0 {
						return 0, protowire.ParseError(l)
					}
					if n == 1 {
						g.Latitude = math.Float32frombits(x)
					} else {
						g.Longitude = math.Float32frombits(x)
					}
					return l, nil
				}
				return -1, nil
			})
			r.Gps = g
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the replica version record.
func (r *ReplicaVersionRecordPB) Marshal() []byte {
	var e enc
	e.str(6, r.ReleasePackageSha256Hex)
	for _, u := range r.ReleasePackageURLs {
		e.bytesAlways(7, []byte(u))
	}
	return e.b
}

// Unmarshal decodes a replica version record.
func (r *ReplicaVersionRecordPB) Unmarshal(b []byte) error {
	*r = ReplicaVersionRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		switch n {
		case 6:
			v, l, err := getBytes(t, b)
			r.ReleasePackageSha256Hex = string(v)
			return l, err
		case 7:
			v, l, err := getBytes(t, b)
			r.ReleasePackageURLs = append(r.ReleasePackageURLs, string(v))
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the blessed-versions list.
func (r *BlessedReplicaVersionsPB) Marshal() []byte {
	var e enc
	for _, v := range r.BlessedVersionIDs {
		e.bytesAlways(1, []byte(v))
	}
	return e.b
}

// Unmarshal decodes the blessed-versions list.
func (r *BlessedReplicaVersionsPB) Unmarshal(b []byte) error {
	*r = BlessedReplicaVersionsPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		if n == 1 {
			v, l, err := getBytes(t, b)
			r.BlessedVersionIDs = append(r.BlessedVersionIDs, string(v))
			return l, err
		}
		return -1, nil
	})
}

// Marshal encodes the subnet list.
func (r *SubnetListRecordPB) Marshal() []byte {
	var e enc
	for _, s := range r.Subnets {
		e.bytesAlways(2, s)
	}
	return e.b
}

// Unmarshal decodes the subnet list.
func (r *SubnetListRecordPB) Unmarshal(b []byte) error {
	*r = SubnetListRecordPB{}
	return fields(b, func(n protowire.Number, t protowire.Type, b []byte) (int, error) {
		if n == 2 {
			v, l, err := getBytes(t, b)
			r.Subnets = append(r.Subnets, v)
			return l, err
		}
		return -1, nil
	})
}
