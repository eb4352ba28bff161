package nns

import "alpnib.dev/ic/principal"

// Candid renders the record as get_subnet returns it
// (rs/registry/canister/src/get_subnet.rs): lists never null, the cost
// schedule Free or else Normal, admins as principals.
func (rec *SubnetRecordPB) Candid() SubnetRecord {
	st, _ := SubnetTypeOfRecord(rec.SubnetType)
	out := SubnetRecord{
		Membership:                 rec.Membership,
		MaxIngressBytesPerMessage:  rec.MaxIngressBytesPerMessage,
		UnitDelayMillis:            rec.UnitDelayMillis,
		InitialNotaryDelayMillis:   rec.InitialNotaryDelayMillis,
		ReplicaVersionID:           rec.ReplicaVersionID,
		DkgIntervalLength:          rec.DkgIntervalLength,
		StartAsNns:                 rec.StartAsNns,
		SubnetType:                 st,
		DkgDealingsPerBlock:        rec.DkgDealingsPerBlock,
		IsHalted:                   rec.IsHalted,
		MaxIngressMessagesPerBlock: rec.MaxIngressMessagesPerBlock,
		MaxIngressBytesPerBlock:    rec.MaxIngressBytesPerBlock,
		MaxBlockPayloadSize:        rec.MaxBlockPayloadSize,
		MaxNumberOfCanisters:       rec.MaxNumberOfCanisters,
		SSHReadonlyAccess:          nonNilStrings(rec.SSHReadonlyAccess),
		SSHBackupAccess:            nonNilStrings(rec.SSHBackupAccess),
		HaltAtCupHeight:            rec.HaltAtCupHeight,
		RecalledReplicaVersionIDs:  nonNilStrings(rec.RecalledReplicaVersionIDs),
		SubnetAdmins:               []principal.Principal{},
	}
	if out.Membership == nil {
		out.Membership = [][]byte{}
	}
	if f := rec.Features; f != nil {
		out.Features = &SubnetFeatures{CanisterSandboxing: f.CanisterSandboxing, HTTPRequests: f.HTTPRequests, SevEnabled: f.SevEnabled}
	}
	// As get_subnet.rs: Free is Free, Normal and Unspecified are Normal.
	if rec.CanisterCyclesCostSchedule == CostScheduleFree {
		out.CanisterCyclesCostSchedule = CostSchedule{Free: &struct{}{}}
	} else {
		out.CanisterCyclesCostSchedule = CostSchedule{Normal: &struct{}{}}
	}
	for _, a := range rec.SubnetAdmins {
		if p, err := principal.FromBytes(a); err == nil {
			out.SubnetAdmins = append(out.SubnetAdmins, p)
		}
	}
	if l := rec.ResourceLimits; l != nil {
		out.ResourceLimits = &ResourceLimits{MaximumStateSize: l.MaximumStateSize, MaximumStateDelta: l.MaximumStateDelta,
			MaximumQueryInstructions: l.MaximumQueryInstructions, MaximumQueryWalltimeSeconds: l.MaximumQueryWalltimeSeconds}
	}
	return out
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
