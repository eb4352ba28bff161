package preflight

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
)

// updateSubnet diffs every declared setting against the live record: a
// change is an ok line "field: live → declared", an unchanged setting a
// note. A declared key list that drops live keys is flagged (the list
// replaces the live one); a features.sev_enabled different from live is
// refused (the registry traps on it), and so is what the registry's subnet
// invariants refuse after the update: an SSH list of more than 50 keys, and
// subnet admins on a subnet that is neither rented (application on the
// free cost schedule) nor a cloud engine. Nothing different → no-op.
func updateSubnet(u *config.UpdateSubnet, live *Snapshot) ([]Check, bool) {
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
			diff(field, optUint(l), strconv.FormatUint(*d, 10))
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
func inheritedLimits(live *Snapshot) []Check {
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
		v := optUint(l.v)
		out = append(out, Check{Severity: Note, Field: l.field, Live: v, Declared: v,
			Message: fmt.Sprintf("%s is inherited: the payload sends its live value (%s), since the registry replaces resource_limits whole", l.field, v)})
	}
	return out
}

// resets refuses a declared features or resource_limits block when the
// live one carries a field alp cannot send: the registry replaces the
// block whole, so adopting the proposal would reset that field.
func resets(u *config.UpdateSubnet, live *Snapshot) []Check {
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

func optUint(v *uint64) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatUint(*v, 10)
}

// setText renders a list order-insensitively: the registry treats these
// lists as sets, so a reordering is no change.
func setText(xs []string) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return "[" + strings.Join(s, ", ") + "]"
}
