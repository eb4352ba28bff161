package proposal

import (
	"fmt"
	"io"
	"reflect"
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

func (u *updateSubnet) payload() any { return u.build(u.live) }

// declared is the payload without the live record: what the declaration
// alone makes.
func (u *updateSubnet) declared() any { return u.build(nil) }

// former is the declaration alone as alp encoded it before v0.5.x
// inherited the query limits (1b4df7c): resource_limits then had only
// the two state fields, and a record of that release pins that encoding.
func (u *updateSubnet) former() []any {
	cur := u.build(nil)
	var old formerUpdateSubnetPayload
	from, to := reflect.ValueOf(cur), reflect.ValueOf(&old).Elem()
	for i := 0; i < to.NumField(); i++ {
		f := to.Type().Field(i)
		if f.Name != "ResourceLimits" {
			to.Field(i).Set(from.FieldByName(f.Name))
		}
	}
	if r := cur.ResourceLimits; r != nil {
		old.ResourceLimits = &formerResourceLimits{MaximumStateSize: r.MaximumStateSize, MaximumStateDelta: r.MaximumStateDelta}
	}
	return []any{old}
}

// formerResourceLimits is resource_limits as alp encoded it until 1b4df7c.
type formerResourceLimits struct {
	MaximumStateSize  *uint64 `candid:"maximum_state_size"`
	MaximumStateDelta *uint64 `candid:"maximum_state_delta"`
}

// formerUpdateSubnetPayload is nns.UpdateSubnetPayload with
// formerResourceLimits; every other field is the same (the test checks).
type formerUpdateSubnetPayload struct {
	SubnetID                   principal.Principal    `candid:"subnet_id"`
	SetGossipConfigToDefault   bool                   `candid:"set_gossip_config_to_default"`
	UnitDelayMillis            *uint64                `candid:"unit_delay_millis"`
	MaxDuplicity               *uint32                `candid:"max_duplicity"`
	Features                   *nns.SubnetFeatures    `candid:"features"`
	HaltAtCupHeight            *bool                  `candid:"halt_at_cup_height"`
	PfnEvaluationPeriodMs      *uint32                `candid:"pfn_evaluation_period_ms"`
	MaxIngressBytesPerMessage  *uint64                `candid:"max_ingress_bytes_per_message"`
	DkgDealingsPerBlock        *uint64                `candid:"dkg_dealings_per_block"`
	MaxBlockPayloadSize        *uint64                `candid:"max_block_payload_size"`
	StartAsNns                 *bool                  `candid:"start_as_nns"`
	IsHalted                   *bool                  `candid:"is_halted"`
	MaxIngressMessagesPerBlock *uint64                `candid:"max_ingress_messages_per_block"`
	MaxNumberOfCanisters       *uint64                `candid:"max_number_of_canisters"`
	RetransmissionRequestMs    *uint32                `candid:"retransmission_request_ms"`
	DkgIntervalLength          *uint64                `candid:"dkg_interval_length"`
	RegistryPollPeriodMs       *uint32                `candid:"registry_poll_period_ms"`
	MaxChunkWaitMs             *uint32                `candid:"max_chunk_wait_ms"`
	ReceiveCheckCacheSize      *uint32                `candid:"receive_check_cache_size"`
	SSHBackupAccess            *[]string              `candid:"ssh_backup_access"`
	MaxChunkSize               *uint32                `candid:"max_chunk_size"`
	InitialNotaryDelayMillis   *uint64                `candid:"initial_notary_delay_millis"`
	MaxArtifactStreamsPerPeer  *uint32                `candid:"max_artifact_streams_per_peer"`
	SubnetType                 *nns.SubnetType        `candid:"subnet_type"`
	SSHReadonlyAccess          *[]string              `candid:"ssh_readonly_access"`
	MaxIngressBytesPerBlock    *uint64                `candid:"max_ingress_bytes_per_block"`
	SubnetAdmins               *[]principal.Principal `candid:"subnet_admins"`
	ResourceLimits             *formerResourceLimits  `candid:"resource_limits"`
}

func (u *updateSubnet) build(live *nns.SubnetRecordPB) nns.UpdateSubnetPayload {
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
		if live != nil && live.ResourceLimits != nil {
			l := live.ResourceLimits
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
