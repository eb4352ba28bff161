package proposal

import (
	"fmt"
	"io"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// updateSubnet is update_subnet: every declared setting, every other one
// null (left untouched on-chain). subnet_type is never sent. The registry
// replaces features and resource_limits whole, so a part of them the
// declaration cannot name is sent with its live value (inherited).
type updateSubnet struct {
	decl   *config.UpdateSubnet
	subnet principal.Principal
	admins *[]principal.Principal
	// live is the target's record; nil when not read.
	live *nns.SubnetRecordPB
}

func newUpdateSubnet(u *config.UpdateSubnet, live *nns.SubnetRecordPB) (*updateSubnet, error) {
	subnet, err := onePrincipal("subnet_id", u.SubnetID)
	if err != nil {
		return nil, err
	}
	out := &updateSubnet{decl: u, subnet: subnet, live: live}
	if u.SubnetAdmins != nil {
		admins, err := principals("subnet_admins", *u.SubnetAdmins)
		if err != nil {
			return nil, err
		}
		out.admins = &admins
	}
	return out, nil
}

func (u *updateSubnet) payload() any {
	d := u.decl
	p := nns.UpdateSubnetPayload{
		SubnetID:                   u.subnet,
		IsHalted:                   d.IsHalted,
		HaltAtCupHeight:            d.HaltAtCupHeight,
		MaxNumberOfCanisters:       d.MaxNumberOfCanisters,
		SSHReadonlyAccess:          d.SSHReadonlyAccess,
		SSHBackupAccess:            d.SSHBackupAccess,
		SubnetAdmins:               u.admins,
		UnitDelayMillis:            d.UnitDelayMillis,
		InitialNotaryDelayMillis:   d.InitialNotaryDelayMillis,
		DkgIntervalLength:          d.DKGIntervalLength,
		DkgDealingsPerBlock:        d.DKGDealingsPerBlock,
		MaxIngressBytesPerMessage:  d.MaxIngressBytesPerMessage,
		MaxIngressBytesPerBlock:    d.MaxIngressBytesPerBlock,
		MaxIngressMessagesPerBlock: d.MaxIngressMessagesPerBlock,
		MaxBlockPayloadSize:        d.MaxBlockPayloadSize,
	}
	if f := d.Features; f != nil {
		sev := f.SevEnabled
		p.Features = &nns.SubnetFeatures{CanisterSandboxing: f.CanisterSandboxing, HTTPRequests: f.HTTPRequests, SevEnabled: &sev}
	}
	if r := d.ResourceLimits; r != nil {
		size, delta := r.MaximumStateSize, r.MaximumStateDelta
		p.ResourceLimits = &nns.ResourceLimits{MaximumStateSize: &size, MaximumStateDelta: &delta}
		if u.live != nil && u.live.ResourceLimits != nil {
			l := u.live.ResourceLimits
			p.ResourceLimits.MaximumQueryInstructions = l.MaximumQueryInstructions
			p.ResourceLimits.MaximumQueryWalltimeSeconds = l.MaximumQueryWalltimeSeconds
		}
	}
	return p
}

// Settings lists the declared settings as name → rendered value, in schema
// order; preflight diffs these against the live record.
func (u *updateSubnet) settings() []setting {
	d := u.decl
	var out []setting
	add := func(name string, present bool, value func() string) {
		if present {
			out = append(out, setting{name, value()})
		}
	}
	add("is_halted", d.IsHalted != nil, func() string { return fmt.Sprint(*d.IsHalted) })
	add("halt_at_cup_height", d.HaltAtCupHeight != nil, func() string { return fmt.Sprint(*d.HaltAtCupHeight) })
	add("max_number_of_canisters", d.MaxNumberOfCanisters != nil, func() string { return fmt.Sprint(*d.MaxNumberOfCanisters) })
	add("ssh_readonly_access", d.SSHReadonlyAccess != nil, func() string { return list(*d.SSHReadonlyAccess) })
	add("ssh_backup_access", d.SSHBackupAccess != nil, func() string { return list(*d.SSHBackupAccess) })
	add("subnet_admins", d.SubnetAdmins != nil, func() string { return list(*d.SubnetAdmins) })
	add("features", d.Features != nil, func() string {
		f := d.Features
		return fmt.Sprintf("{canister_sandboxing = %v, http_requests = %v, sev_enabled = %v}", f.CanisterSandboxing, f.HTTPRequests, f.SevEnabled)
	})
	add("resource_limits", d.ResourceLimits != nil, func() string {
		r := d.ResourceLimits
		return fmt.Sprintf("{maximum_state_size = %d, maximum_state_delta = %d}", r.MaximumStateSize, r.MaximumStateDelta)
	})
	add("unit_delay_millis", d.UnitDelayMillis != nil, func() string { return fmt.Sprint(*d.UnitDelayMillis) })
	add("initial_notary_delay_millis", d.InitialNotaryDelayMillis != nil, func() string { return fmt.Sprint(*d.InitialNotaryDelayMillis) })
	add("dkg_interval_length", d.DKGIntervalLength != nil, func() string { return fmt.Sprint(*d.DKGIntervalLength) })
	add("dkg_dealings_per_block", d.DKGDealingsPerBlock != nil, func() string { return fmt.Sprint(*d.DKGDealingsPerBlock) })
	add("max_ingress_bytes_per_message", d.MaxIngressBytesPerMessage != nil, func() string { return fmt.Sprint(*d.MaxIngressBytesPerMessage) })
	add("max_ingress_bytes_per_block", d.MaxIngressBytesPerBlock != nil, func() string { return fmt.Sprint(*d.MaxIngressBytesPerBlock) })
	add("max_ingress_messages_per_block", d.MaxIngressMessagesPerBlock != nil, func() string { return fmt.Sprint(*d.MaxIngressMessagesPerBlock) })
	add("max_block_payload_size", d.MaxBlockPayloadSize != nil, func() string { return fmt.Sprint(*d.MaxBlockPayloadSize) })
	return out
}

type setting struct{ name, value string }

func list(xs []string) string {
	if len(xs) == 0 {
		return "[] (clears every entry)"
	}
	return "[" + strings.Join(xs, ", ") + "]"
}

func (u *updateSubnet) render(w io.Writer) {
	fmt.Fprintf(w, "  subnet:   %s\n", u.subnet)
	for _, s := range u.settings() {
		fmt.Fprintf(w, "  set:      %s = %s\n", s.name, s.value)
	}
	if u.live == nil {
		return
	}
	for _, p := range u.parts() {
		if p.How == Inherits {
			fmt.Fprintf(w, "  inherit:  %s = %s (live value; the field is replaced whole)\n", p.Field, p.Sends)
		}
	}
}
