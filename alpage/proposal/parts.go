package proposal

import (
	"strconv"

	"alpnib.dev/ic/nns"
)

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

// parts is the table: each part of a declared features or resource_limits
// block, then what the live record carries beyond alp's view (inside
// those blocks: reset when the block is sent; elsewhere: untouched). With
// no live record the live column reads "unknown".
func (u *updateSubnet) parts() []Part {
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
