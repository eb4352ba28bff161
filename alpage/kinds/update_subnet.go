package kinds

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// UpdateSubnet is an "update_subnet" proposal's block. Every field but
// subnet_id is optional, and nil means "leave untouched on-chain".
type UpdateSubnet struct {
	SubnetID                   string          `hcl:"subnet_id" since:"v0.5.0" doc:"Subnet whose configuration changes (subnet.<name>.id)."`
	IsHalted                   *bool           `hcl:"is_halted,optional" since:"v0.5.0" doc:"Whether the subnet is halted: a halted subnet no longer creates or executes blocks. This is how a subnet is frozen for a recovery, and setting it back to false is how it resumes."`
	HaltAtCupHeight            *bool           `hcl:"halt_at_cup_height,optional" since:"v0.5.0" doc:"Halt the subnet once it reaches the next CUP height rather than immediately, so it stops at a known state. The registry resets this flag when a new CUP proposal is approved and sets is_halted instead, so the subnet stays halted until a later proposal sets is_halted = false."`
	MaxNumberOfCanisters       *uint64         `hcl:"max_number_of_canisters,optional" since:"v0.5.0" doc:"Maximum number of canisters that may be present on the subnet at any one time. 0 does not mean unlimited: it means the replica's own default applies."`
	SSHReadonlyAccess          *[]string       `hcl:"ssh_readonly_access,optional" since:"v0.5.0" doc:"Public keys whose owners get \"readonly\" SSH access to every replica on the subnet, for when a subnet recovery has to be performed. The list is replaced, not merged, so it must name every key that keeps access; an empty list revokes all of them. Preflight flags a declared list that clears existing entries."`
	SSHBackupAccess            *[]string       `hcl:"ssh_backup_access,optional" since:"v0.5.0" doc:"Public keys whose owners get \"backup\" SSH access to the subnet's nodes, which is what makes backing up the NNS possible. Replaced wholesale like ssh_readonly_access."`
	SubnetAdmins               *[]string       `hcl:"subnet_admins,optional" since:"v0.5.0" doc:"Principals that have admin privileges on the subnet. Replaced wholesale, so the list must be complete."`
	Features                   *Features       `hcl:"features,block" since:"v0.5.0" doc:"The subnet's feature flags. Replaced wholesale; see the features block."`
	ResourceLimits             *ResourceLimits `hcl:"resource_limits,block" since:"v0.5.0" doc:"The subnet's resource-consumption limits. Replaced wholesale; see the resource_limits block."`
	UnitDelayMillis            *uint64         `hcl:"unit_delay_millis,optional" since:"v0.5.0" doc:"Unit delay for the blockmaker, in milliseconds."`
	InitialNotaryDelayMillis   *uint64         `hcl:"initial_notary_delay_millis,optional" since:"v0.5.0" doc:"Initial delay for the notary, in milliseconds, which gives rank-0 blocks time to propagate."`
	DKGIntervalLength          *uint64         `hcl:"dkg_interval_length,optional" since:"v0.5.0" doc:"Length of every DKG interval, counted in the rounds that follow the DKG summary."`
	DKGDealingsPerBlock        *uint64         `hcl:"dkg_dealings_per_block,optional" since:"v0.5.0" doc:"Upper bound on the number of DKG dealings allowed in one block."`
	MaxIngressBytesPerMessage  *uint64         `hcl:"max_ingress_bytes_per_message,optional" since:"v0.5.0" doc:"Maximum bytes per ingress message. A hard cap: a message over the limit is dropped."`
	MaxIngressBytesPerBlock    *uint64         `hcl:"max_ingress_bytes_per_block,optional" since:"v0.5.0" doc:"How big an ingress payload may be when held in memory, which may exceed max_block_payload_size since ingress messages are stripped before a block is disseminated. 0 means the replica's built-in default; too high a value drives up replica memory use."`
	MaxIngressMessagesPerBlock *uint64         `hcl:"max_ingress_messages_per_block,optional" since:"v0.5.0" doc:"Maximum number of ingress messages per block."`
	MaxBlockPayloadSize        *uint64         `hcl:"max_block_payload_size,optional" since:"v0.5.0" doc:"Maximum size in bytes a block payload may have when sent over the wire. Setting it too high slows block delivery to peers, which can cause forks as higher-rank blocks get proposed meanwhile."`
}

// Features is the features block inside update_subnet.
type Features struct {
	CanisterSandboxing bool `hcl:"canister_sandboxing" since:"v0.5.0" doc:"Whether canister execution happens in a sandboxed process. Disabled by default."`
	HTTPRequests       bool `hcl:"http_requests" since:"v0.5.0" doc:"Whether canisters on the subnet may perform outbound HTTP(S) requests."`
	SevEnabled         bool `hcl:"sev_enabled" since:"v0.5.0" doc:"Whether the subnet runs with SEV-SNP enabled. Required because the features record is replaced wholesale, but it cannot be changed: the registry only accepts sev_enabled as it was set when the subnet was created, and traps on any change after the proposal is adopted. State the subnet's current value; preflight and the dry-run both reject anything else."`
}

// ResourceLimits is the resource_limits block inside update_subnet.
type ResourceLimits struct {
	MaximumStateSize  uint64 `hcl:"maximum_state_size" since:"v0.5.0" doc:"Maximum subnet state size in bytes."`
	MaximumStateDelta uint64 `hcl:"maximum_state_delta" since:"v0.5.0" doc:"Maximum subnet state delta in bytes."`
}

// updateSubnet is the kind: update_subnet (UPDATE_CONFIG_OF_SUBNET).
var updateSubnet = Define(Def[UpdateSubnet, nns.UpdateSubnetPayload, UpdateSubnetFacts]{
	Name: "update_subnet", Generates: "for declared subnet admins", Since: "v0.5.0",
	Doc: "Nested in a proposal of kind \"update_subnet\": update_subnet (UPDATE_CONFIG_OF_SUBNET). Changes a subnet's configuration record. Every field is optional and an omitted one is left untouched on-chain, so a proposal changes exactly what it declares. Preflight diffs every declared field against the current record. Two payload fields are not settings here: subnet_type, which the registry asserts is unchanged, and a sev_enabled change, which it rejects outright.",
	Nested: []BlockDoc{
		{Header: `features { }`, Since: "v0.5.0", Type: reflect.TypeFor[Features](),
			Doc: "Inside an update_subnet block: the subnet's feature flags. Sending it replaces the whole features record rather than merging, so all three fields are required: an omitted one would be written as false. sev_enabled must therefore restate what the subnet already has; the registry rejects a change to it."},
		{Header: `resource_limits { }`, Since: "v0.5.0", Type: reflect.TypeFor[ResourceLimits](),
			Doc: "Inside an update_subnet block: the subnet's state-size limits. Replaced wholesale like features, so both fields are required."},
	},
	OnChain: Execute[nns.UpdateSubnetPayload](nns.FunctionUpdateConfigOfSubnet),
	Changes: func(p nns.UpdateSubnetPayload) []Change {
		if p.SubnetAdmins == nil {
			return nil
		}
		return []Change{{OpAdmins, p.SubnetID.String(), AdminsTarget(texts(*p.SubnetAdmins))}}
	},
	// the registry checks its invariants on the record written, and
	// those read the members
	Seed: func(ctx context.Context, s Seeder, p nns.UpdateSubnetPayload) error {
		return s.SubnetWithMembers(ctx, p.SubnetID)
	},
	Generate: generateUpdateSubnet,
	// The target: the registry replaces features and resource_limits
	// whole, so the parts of them the block cannot name (the query
	// limits) are sent as the target's record has them, as ic-admin's
	// ResourceLimits::inherit_from does; without the record they would
	// be reset.
	LiveSubnet: func(u *UpdateSubnet) string { return u.SubnetID },
})

// UpdateSubnetFacts is what an update_subnet proposal's preflight reads.
type UpdateSubnetFacts struct {
	// Subnet is the target's record as get_subnet renders it; nil when
	// the registry has none.
	Subnet *nns.SubnetRecord
	// SubnetPB is the same record as the registry stores it: the payload
	// inherits from it, and it shows the fields alp does not model; nil
	// when not read or absent.
	SubnetPB *nns.SubnetRecordPB
}

func (u *UpdateSubnet) Validate(c Checker) {
	c.Principal("subnet_id", u.SubnetID, c.At("", 0, "subnet_id"))
	if u.SubnetAdmins != nil {
		at := c.At("", 0, "subnet_admins")
		for _, a := range *u.SubnetAdmins {
			c.Principal("subnet_admins", a, at)
			c.Once("admin", "subnet_admins", a, at)
		}
		if n := len(*u.SubnetAdmins); n > MaxSubnetAdmins {
			c.Errorf(at, "Too many admins", "proposal %q: subnet_admins lists %d principals; at most %d are allowed, so drop %d", c.Proposal(), n, MaxSubnetAdmins, n-MaxSubnetAdmins)
		}
	}
}

func (u *UpdateSubnet) IDs(visit func(*string)) {
	visit(&u.SubnetID)
	if u.SubnetAdmins != nil {
		for i := range *u.SubnetAdmins {
			visit(&(*u.SubnetAdmins)[i])
		}
	}
}

func (u *UpdateSubnet) Build(live Live) (Payload[nns.UpdateSubnetPayload], error) {
	subnet, err := onePrincipal("subnet_id", u.SubnetID)
	if err != nil {
		return Payload[nns.UpdateSubnetPayload]{}, err
	}
	b := &updateSubnetBuild{decl: u, subnet: subnet, live: live.Subnet}
	if u.SubnetAdmins != nil {
		admins, err := principals("subnet_admins", *u.SubnetAdmins)
		if err != nil {
			return Payload[nns.UpdateSubnetPayload]{}, err
		}
		b.admins = &admins
	}
	declared := b.build(nil)
	return Payload[nns.UpdateSubnetPayload]{Value: b.build(b.live), Render: b.Render, Declared: &declared, Former: b.Former(), Parts: b.Parts()}, nil
}

// updateSubnetBuild is update_subnet: every declared setting, every other one
// null (left untouched on-chain). subnet_type is never sent. The registry
// replaces features and resource_limits whole, so a part of them the
// declaration cannot name is sent with its live value (inherited).
type updateSubnetBuild struct {
	decl   *UpdateSubnet
	subnet principal.Principal
	admins *[]principal.Principal
	// live is the target's record; nil when not read.
	live *nns.SubnetRecordPB
}

// Former is the declaration alone as alp encoded it before v0.5.x
// inherited the query limits (1b4df7c): resource_limits then had only
// the two state fields, and a record of that release pins that encoding.
func (u *updateSubnetBuild) Former() []any {
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

func (u *updateSubnetBuild) build(live *nns.SubnetRecordPB) nns.UpdateSubnetPayload {
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
func (u *updateSubnetBuild) settings() []setting {
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

func (u *updateSubnetBuild) Render(w io.Writer) {
	fmt.Fprintf(w, "  subnet:   %s\n", u.subnet)
	for _, s := range u.settings() {
		fmt.Fprintf(w, "  set:      %s = %s\n", s.name, s.value)
	}
	if u.live == nil {
		return
	}
	for _, p := range u.Parts() {
		if p.How == Inherits {
			fmt.Fprintf(w, "  inherit:  %s = %s (live value; the field is replaced whole)\n", p.Field, p.Sends)
		}
	}
}

// How is what the payload does to one part of the live record.
type How string

// The ways a payload treats a part.
const (
	// Changes: declared, and different from live.
	Changes How = "changes"
	// Keeps: declared, and equal to live.
	Keeps How = "keeps"
	// Inherits: not declared; sent with its live value because the field
	// around it is replaced whole.
	Inherits How = "inherits"
	// Resets: the live record carries it inside a field the payload
	// replaces whole, and the payload cannot carry it: adopting the
	// proposal would lose it.
	Resets How = "resets"
	// Untouched: a live field the payload does not send, so the registry
	// leaves it as it is.
	Untouched How = "untouched"
)

// Part is one row of update_subnet's field-by-field table.
type Part struct {
	Field string `json:"field"`
	Live  string `json:"live"`
	Sends string `json:"sends"`
	How   How    `json:"how"`
}

// Parts is the table: each part of a declared features or resource_limits
// block, then what the live record carries beyond alp's view (inside
// those blocks: reset when the block is sent; elsewhere: untouched). With
// no live record the live column reads "unknown".
func (u *updateSubnetBuild) Parts() []Part {
	var out []Part
	live := u.live
	declared := func(field, liveV, sends string) {
		how := Changes
		if liveV == sends {
			how = Keeps
		}
		out = append(out, Part{Field: field, Live: liveV, Sends: sends, How: how})
	}
	if f := u.decl.Features; f != nil {
		var lf *nns.SubnetFeaturesRecord
		if live != nil {
			lf = live.Features
			if lf == nil {
				lf = &nns.SubnetFeaturesRecord{}
			}
		}
		lv := func(get func(*nns.SubnetFeaturesRecord) bool) string {
			if lf == nil {
				return "unknown"
			}
			return strconv.FormatBool(get(lf))
		}
		declared("features.canister_sandboxing", lv(func(r *nns.SubnetFeaturesRecord) bool { return r.CanisterSandboxing }), strconv.FormatBool(f.CanisterSandboxing))
		declared("features.http_requests", lv(func(r *nns.SubnetFeaturesRecord) bool { return r.HTTPRequests }), strconv.FormatBool(f.HTTPRequests))
		declared("features.sev_enabled", lv(func(r *nns.SubnetFeaturesRecord) bool { return r.SevEnabled != nil && *r.SevEnabled }), strconv.FormatBool(f.SevEnabled))
	}
	if r := u.decl.ResourceLimits; r != nil {
		var lr *nns.ResourceLimitsRecord
		if live != nil {
			lr = live.ResourceLimits
			if lr == nil {
				lr = &nns.ResourceLimitsRecord{}
			}
		}
		lv := func(get func(*nns.ResourceLimitsRecord) *uint64) string {
			if lr == nil {
				return "unknown"
			}
			return optText(get(lr))
		}
		declared("resource_limits.maximum_state_size", lv(func(l *nns.ResourceLimitsRecord) *uint64 { return l.MaximumStateSize }), strconv.FormatUint(r.MaximumStateSize, 10))
		declared("resource_limits.maximum_state_delta", lv(func(l *nns.ResourceLimitsRecord) *uint64 { return l.MaximumStateDelta }), strconv.FormatUint(r.MaximumStateDelta, 10))
		for _, q := range []struct {
			name string
			get  func(*nns.ResourceLimitsRecord) *uint64
		}{
			{"resource_limits.maximum_query_instructions", func(l *nns.ResourceLimitsRecord) *uint64 { return l.MaximumQueryInstructions }},
			{"resource_limits.maximum_query_walltime_seconds", func(l *nns.ResourceLimitsRecord) *uint64 { return l.MaximumQueryWalltimeSeconds }},
		} {
			v := lv(q.get)
			sends := v
			if lr == nil {
				sends = "unset"
			}
			out = append(out, Part{Field: q.name, Live: v, Sends: sends, How: Inherits})
		}
	}
	if live == nil {
		return out
	}
	extra := live.Unmodelled()
	beyond := func(block string, sent bool, fields []nns.Field) {
		for _, f := range fields {
			p := Part{Field: block + " " + f.String(), Live: "set", Sends: "not sent", How: Untouched}
			if sent {
				p.How = Resets
			}
			out = append(out, p)
		}
	}
	beyond("features", u.decl.Features != nil, extra.Features)
	beyond("resource_limits", u.decl.ResourceLimits != nil, extra.ResourceLimits)
	for _, f := range extra.Record {
		out = append(out, Part{Field: f.String(), Live: "set", Sends: "not sent", How: Untouched})
	}
	return out
}

func optText(v *uint64) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatUint(*v, 10)
}

// Fetch reads the subnet's record, rendered and as stored: the payload
// inherits from the stored one, which also shows the fields alp does not
// model.
func (u *UpdateSubnet) Fetch(ctx context.Context, r Reader) (f UpdateSubnetFacts, err error) {
	if f.Subnet, err = r.Subnet(ctx, u.SubnetID); err != nil || f.Subnet == nil {
		return f, err
	}
	f.SubnetPB, err = r.SubnetRecord(ctx, u.SubnetID)
	return f, err
}

// Check diffs every declared setting against the live record: a
// change is an ok line "field: live → declared", an unchanged setting a
// note. A declared key list that drops live keys is flagged (the list
// replaces the live one); a features.sev_enabled different from live is
// refused (the registry traps on it), and so is what the registry's subnet
// invariants refuse after the update: an SSH list of more than 50 keys, and
// subnet admins on a subnet that is neither rented (application on the
// free cost schedule) nor a cloud engine. Nothing different → no-op.
func (u *UpdateSubnet) Check(live UpdateSubnetFacts, _ Options) ([]Check, bool) {
	rec := live.Subnet
	if rec == nil {
		return missingSubnet(u.SubnetID), false
	}
	var checks []Check
	changes := 0
	diff := func(field, liveV, declV string) {
		if liveV == declV {
			checks = append(checks, Check{Severity: Note, Field: field, Live: liveV, Declared: declV, Message: fmt.Sprintf("%s is already %s", field, declV)})
			return
		}
		changes++
		checks = append(checks, Check{Severity: OK, Field: field, Live: liveV, Declared: declV, Message: fmt.Sprintf("%s: %s → %s", field, liveV, declV)})
	}
	num := func(field string, d *uint64, l uint64) {
		if d != nil {
			diff(field, strconv.FormatUint(l, 10), strconv.FormatUint(*d, 10))
		}
	}
	optNum := func(field string, d, l *uint64) {
		if d != nil {
			diff(field, optText(l), strconv.FormatUint(*d, 10))
		}
	}
	boolean := func(field string, d *bool, l bool) {
		if d != nil {
			diff(field, strconv.FormatBool(l), strconv.FormatBool(*d))
		}
	}
	keys := func(field string, d *[]string, l []string) {
		if d == nil {
			return
		}
		diff(field, setText(l), setText(*d))
		if dropped := missingFrom(*d, l); len(dropped) > 0 {
			checks = append(checks, Check{Severity: Flagged, Field: field, Message: fmt.Sprintf("%s drops %d existing key(s) (%s); the declared list replaces the live one, so name every key that keeps access", field, len(dropped), shortList(dropped))})
		}
		if len(*d) > maxSSHKeys {
			checks = append(checks, Check{Severity: Refused, Field: field, Message: fmt.Sprintf("%s names %d keys; the registry's invariants allow at most %d per list and refuse the update", field, len(*d), maxSSHKeys)})
		}
	}

	boolean("is_halted", u.IsHalted, rec.IsHalted)
	if u.HaltAtCupHeight != nil {
		boolean("halt_at_cup_height", u.HaltAtCupHeight, rec.HaltAtCupHeight)
	}
	num("max_number_of_canisters", u.MaxNumberOfCanisters, rec.MaxNumberOfCanisters)
	keys("ssh_readonly_access", u.SSHReadonlyAccess, rec.SSHReadonlyAccess)
	keys("ssh_backup_access", u.SSHBackupAccess, rec.SSHBackupAccess)
	if u.SubnetAdmins != nil {
		var liveAdmins []string
		for _, a := range rec.SubnetAdmins {
			liveAdmins = append(liveAdmins, a.String())
		}
		diff("subnet_admins", setText(liveAdmins), setText(*u.SubnetAdmins))
		if dropped := missingFrom(*u.SubnetAdmins, liveAdmins); len(dropped) > 0 {
			checks = append(checks, Check{Severity: Flagged, Field: "subnet_admins", Message: fmt.Sprintf("subnet_admins drops %d existing admin(s) (%s); the declared list replaces the live one, so name every admin that stays", len(dropped), shortList(dropped))})
		}
		free := rec.CanisterCyclesCostSchedule.Free != nil
		kind := rec.SubnetType.Name()
		if len(*u.SubnetAdmins) > 0 && !(free && (kind == "application" || kind == "cloud_engine")) {
			checks = append(checks, Check{Severity: Refused, Field: "subnet_admins", Message: fmt.Sprintf("subnet %s is a%s %s subnet on the %s cost schedule; the registry's invariants allow subnet admins only on a rented subnet (application, free) or a cloud engine on the free schedule, and refuse the update", u.SubnetID, article(kind), orUnknown(kind), schedule(free))})
		}
	}
	if f := u.Features; f != nil {
		var sandbox, http, sev bool
		if lf := rec.Features; lf != nil {
			sandbox, http = lf.CanisterSandboxing, lf.HTTPRequests
			sev = lf.SevEnabled != nil && *lf.SevEnabled
		}
		diff("features.canister_sandboxing", strconv.FormatBool(sandbox), strconv.FormatBool(f.CanisterSandboxing))
		diff("features.http_requests", strconv.FormatBool(http), strconv.FormatBool(f.HTTPRequests))
		if f.SevEnabled != sev {
			changes++
			checks = append(checks, Check{Severity: Refused, Field: "features.sev_enabled", Live: strconv.FormatBool(sev), Declared: strconv.FormatBool(f.SevEnabled),
				Message: fmt.Sprintf("features.sev_enabled = %v differs from the live %v; the registry traps on any sev_enabled change, so state %v", f.SevEnabled, sev, sev)})
		} else {
			diff("features.sev_enabled", strconv.FormatBool(sev), strconv.FormatBool(f.SevEnabled))
		}
	}
	if r := u.ResourceLimits; r != nil {
		var size, delta *uint64
		if lr := rec.ResourceLimits; lr != nil {
			size, delta = lr.MaximumStateSize, lr.MaximumStateDelta
		}
		optNum("resource_limits.maximum_state_size", &r.MaximumStateSize, size)
		optNum("resource_limits.maximum_state_delta", &r.MaximumStateDelta, delta)
		checks = append(checks, inheritedLimits(live)...)
	}
	checks = append(checks, resets(u, live)...)
	num("unit_delay_millis", u.UnitDelayMillis, rec.UnitDelayMillis)
	num("initial_notary_delay_millis", u.InitialNotaryDelayMillis, rec.InitialNotaryDelayMillis)
	num("dkg_interval_length", u.DKGIntervalLength, rec.DkgIntervalLength)
	num("dkg_dealings_per_block", u.DKGDealingsPerBlock, rec.DkgDealingsPerBlock)
	num("max_ingress_bytes_per_message", u.MaxIngressBytesPerMessage, rec.MaxIngressBytesPerMessage)
	num("max_ingress_bytes_per_block", u.MaxIngressBytesPerBlock, rec.MaxIngressBytesPerBlock)
	num("max_ingress_messages_per_block", u.MaxIngressMessagesPerBlock, rec.MaxIngressMessagesPerBlock)
	num("max_block_payload_size", u.MaxBlockPayloadSize, rec.MaxBlockPayloadSize)

	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "every declared setting already has its live value, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// missingFrom lists the entries of live that declared leaves out.
func missingFrom(declared, live []string) []string {
	var out []string
	for _, k := range live {
		if !slices.Contains(declared, k) {
			out = append(out, k)
		}
	}
	return out
}

// inheritedLimits notes each query limit the payload carries with its live
// value: the declaration cannot name them, and the registry replaces
// resource_limits whole, so they are inherited (ic-admin's
// ResourceLimits::inherit_from).
func inheritedLimits(live UpdateSubnetFacts) []Check {
	var q, w *uint64
	switch {
	case live.SubnetPB != nil && live.SubnetPB.ResourceLimits != nil:
		q, w = live.SubnetPB.ResourceLimits.MaximumQueryInstructions, live.SubnetPB.ResourceLimits.MaximumQueryWalltimeSeconds
	case live.SubnetPB == nil && live.Subnet.ResourceLimits != nil:
		q, w = live.Subnet.ResourceLimits.MaximumQueryInstructions, live.Subnet.ResourceLimits.MaximumQueryWalltimeSeconds
	}
	var out []Check
	for _, l := range []struct {
		field string
		v     *uint64
	}{{"resource_limits.maximum_query_instructions", q}, {"resource_limits.maximum_query_walltime_seconds", w}} {
		v := optText(l.v)
		out = append(out, Check{Severity: Note, Field: l.field, Live: v, Declared: v,
			Message: fmt.Sprintf("%s is inherited: the payload sends its live value (%s), since the registry replaces resource_limits whole", l.field, v)})
	}
	return out
}

// resets refuses a declared features or resource_limits block when the
// live one carries a field alp cannot send: the registry replaces the
// block whole, so adopting the proposal would reset that field.
func resets(u *UpdateSubnet, live UpdateSubnetFacts) []Check {
	if live.SubnetPB == nil {
		return nil
	}
	extra := live.SubnetPB.Unmodelled()
	var out []Check
	for _, b := range []struct {
		block    string
		declared bool
		fields   []nns.Field
	}{{"features", u.Features != nil, extra.Features}, {"resource_limits", u.ResourceLimits != nil, extra.ResourceLimits}} {
		if !b.declared {
			continue
		}
		for _, f := range b.fields {
			out = append(out, Check{Severity: Refused, Field: b.block, Live: "set",
				Message: fmt.Sprintf("the live %s carries %s, which alp does not model and cannot send; the registry replaces %s whole, so this proposal would reset it; leave %s out of the proposal, or use a release of alp that knows the field", b.block, f, b.block, b.block)})
		}
	}
	return out
}

// maxSSHKeys is the registry's bound on each SSH access list
// (MAX_NUM_SSH_KEYS, rs/registry/canister/src/invariants/subnet.rs).
const maxSSHKeys = 50

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}

func orUnknown(kind string) string {
	if kind == "" {
		return "unknown-type"
	}
	return kind
}

func schedule(free bool) string {
	if free {
		return "free"
	}
	return "normal"
}

// setText renders a list order-insensitively: the registry treats these
// lists as sets, so a reordering is no change.
func setText(xs []string) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return "[" + strings.Join(s, ", ") + "]"
}

// Closes is the subnet's admins, when the block sets them: the one
// setting drift generates an update_subnet for.
func (u *UpdateSubnet) Closes() []Change {
	if u.SubnetAdmins == nil {
		return nil
	}
	return []Change{{OpAdmins, u.SubnetID, AdminsTarget(*u.SubnetAdmins)}}
}

// HCL writes the block as alp plan --generate does: the subnet and its
// admins, the one setting drift generates (admins are principals of
// people, not blocks, so they are written as they are).
func (u *UpdateSubnet) HCL(b *strings.Builder, ref func(id string) string) {
	var as []string
	if u.SubnetAdmins != nil {
		for _, a := range *u.SubnetAdmins {
			as = append(as, Quote(a))
		}
	}
	fmt.Fprintf(b, "  update_subnet {\n    subnet_id     = %s\n    subnet_admins = [%s]\n  }\n", ref(u.SubnetID), strings.Join(as, ", "))
}

// Generate proposes, per declared subnet whose on-chain admins differ
// from the declared ones, the update_subnet that sets subnet_admins to
// them. Only the admins: of a subnet block's fields they are the one an
// update_subnet carries (type, cost schedule and sev_enabled are
// Unclosable).
func generateUpdateSubnet(d *Drift) (out []Generated, _ []string) {
	for _, s := range d.Fleet.Subnets {
		facts := d.Chain.Subnets[s.ID]
		if !facts.Found {
			continue
		}
		want, have := sortedCopy(s.Admins), sortedCopy(facts.Admins)
		if slices.Equal(want, have) || d.Pending[Change{Op: OpAdmins, Subject: s.ID, Target: strings.Join(want, ",")}] {
			continue
		}
		admins := slices.Clone(want)
		p := Generated{Body: &UpdateSubnet{SubnetID: s.ID, SubnetAdmins: &admins}}
		p.Name = "set-admins-of-" + slug(d.n.subnet(s.ID).word())
		p.Title = fmt.Sprintf("Update subnet %s: set its subnet admins", Short(s.ID))
		var b strings.Builder
		fmt.Fprintf(&b, "Update the configuration of subnet %s: set subnet_admins to %s.\n\nMotivation:\n", s.ID, "["+strings.Join(want, ", ")+"]")
		for _, a := range want {
			if !slices.Contains(have, a) {
				fmt.Fprintf(&b, "- %s is declared an admin of the subnet and is not one on-chain.\n", a)
			}
		}
		for _, a := range have {
			if !slices.Contains(want, a) {
				fmt.Fprintf(&b, "- %s is an admin on-chain and is no longer declared one.\n", a)
			}
		}
		p.Summary = b.String()
		out = append(out, p)
	}
	return out, nil
}
