package config

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"alpnib.dev/alpage/decentral"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Subnet types and cost schedules the registry knows.
const (
	SubnetApplication         = "application"
	SubnetVerifiedApplication = "verified_application"
	SubnetSystem              = "system"
	SubnetCloudEngine         = "cloud_engine"

	ScheduleNormal = "normal"
	ScheduleFree   = "free"

	// MaxSubnetAdmins is the most admins a subnet may declare.
	MaxSubnetAdmins = kinds.MaxSubnetAdmins
	// ChipIDLen is the length of an AMD SEV-SNP CHIP_ID in bytes.
	ChipIDLen = 64
	// VersionNone opts a node out of the GuestOS version check.
	VersionNone = "none"
)

// EffectiveType is the subnet's type, application when omitted.
func (s *Subnet) EffectiveType() string {
	if s.Type == "" {
		return SubnetApplication
	}
	return s.Type
}

// EffectiveCostSchedule is the subnet's schedule: free for an omitted one
// on a cloud_engine, normal for any other omitted one.
func (s *Subnet) EffectiveCostSchedule() string {
	switch {
	case s.CostSchedule != "":
		return s.CostSchedule
	case s.EffectiveType() == SubnetCloudEngine:
		return ScheduleFree
	default:
		return ScheduleNormal
	}
}

func (l *loader) validateResources(r *Resources) {
	l.checkDuplicateIDs(r)
	for _, s := range r.Subnets {
		l.validateSubnet(s)
	}
	for _, p := range r.NodeProviders {
		l.checkPrincipal(p.ID, l.attr(p.Range, "id"), "node_provider", p.Name, "id")
	}
	for _, o := range r.NodeOperators {
		l.checkPrincipal(o.ID, l.attr(o.Range, "id"), "node_operator", o.Name, "id")
		if o.Provider != "" {
			l.checkPrincipal(o.Provider, l.attr(o.Range, "provider"), "node_operator", o.Name, "provider")
		}
	}
	for _, v := range r.GuestOSVersions {
		if strings.TrimSpace(v.ID) == "" || strings.ContainsAny(v.ID, " \t\n") {
			at := l.attr(v.Range, "id")
			l.errorf(&at, "Invalid guestos_version id", "guestos_version %q: id %q must be the version hash", v.Name, v.ID)
		}
	}
	for _, v := range r.HostOSVersions {
		if strings.TrimSpace(v.ID) == "" || strings.ContainsAny(v.ID, " \t\n") {
			at := l.attr(v.Range, "id")
			l.errorf(&at, "Invalid hostos_version id", "hostos_version %q: id %q must be the version hash", v.Name, v.ID)
		}
	}
	for _, o := range r.NodeOperators {
		if o.IPv6 != nil && !nns.IPv6FormatOK(*o.IPv6) {
			at := l.attr(o.Range, "ipv6")
			l.errorf(&at, "IPv6 address not in the registry's format", "node_operator %q: ipv6 %q is not eight colon-separated groups of hexadecimal digits; the registry stores every group, with no :: shorthand", o.Name, *o.IPv6)
		}
	}
	l.applyDecommissionedProviders(r)
	l.applyGuestOSDefault(r)
	l.applyHostOSDefault(r)
	for _, n := range r.Nodes {
		l.validateNode(n)
	}
}

func (l *loader) checkDuplicateIDs(r *Resources) {
	for _, tier := range tiers {
		for _, kind := range tier {
			var order []string
			byID := map[string][]ref{}
			names := map[hcl.Range]string{}
			for name, v := range r.ids(kind) {
				names[v.at] = name
				key := canonicalID(kind, v.id)
				byID[key] = append(byID[key], v)
				if len(byID[key]) == 1 {
					order = append(order, key)
				}
			}
			for _, id := range order {
				refs := byID[id]
				if len(refs) < 2 {
					continue
				}
				sortRefs(refs)
				for _, dup := range refs[1:] {
					at := l.attr(dup.at, "id")
					l.errorf(&at, fmt.Sprintf("Duplicate %s id", kind),
						"%s %q and %s %q both have id %q (at %s and %s); each %s must be declared once",
						kind, names[refs[0].at], kind, names[dup.at], id, Site(refs[0].at), Site(dup.at), kind)
				}
			}
		}
	}
}

// canonicalID is the form two ids of kind are compared in: a principal's
// text is case-insensitive and a version hash is hex, so "ABC" and "abc"
// are one id; a data center id is compared as written.
func canonicalID(kind, id string) string {
	switch kind {
	case kindDataCenter:
		return id
	case kindGuestOSVersion, kindHostOSVersion:
		return strings.ToLower(id)
	}
	if p, err := principal.Decode(id); err == nil {
		return p.String()
	}
	return id
}

// sortRefs orders places by file, then line, so "first" is stable.
func sortRefs(refs []ref) {
	less := func(a, b hcl.Range) bool {
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	}
	for i := 1; i < len(refs); i++ {
		for j := i; j > 0 && less(refs[j].at, refs[j-1].at); j-- {
			refs[j], refs[j-1] = refs[j-1], refs[j]
		}
	}
}

func (l *loader) validateSubnet(s *Subnet) {
	l.checkPrincipal(s.ID, l.attr(s.Range, "id"), "subnet", s.Name, "id")
	typeAt, schedAt, adminsAt := l.attr(s.Range, "type"), l.attr(s.Range, "cost_schedule"), l.attr(s.Range, "admins")
	minAt := l.attr(s.Range, "min_nakamoto_coefficients")
	for _, name := range slices.Sorted(maps.Keys(s.MinNakamoto)) {
		if _, ok := decentral.AttributeNamed(name); !ok {
			l.errorf(&minAt, "Invalid Nakamoto attribute", "subnet %q: min_nakamoto_coefficients names %q, which is not one of node_provider, data_center, data_center_owner, country", s.Name, name)
		} else if v := s.MinNakamoto[name]; v < 0 {
			l.errorf(&minAt, "Invalid Nakamoto minimum", "subnet %q: min_nakamoto_coefficients.%s is %d; a minimum is 0 (none) or more", s.Name, name, v)
		}
	}
	switch s.EffectiveType() {
	case SubnetApplication, SubnetVerifiedApplication, SubnetSystem, SubnetCloudEngine:
	default:
		l.errorf(&typeAt, "Invalid subnet type", "subnet %q: type %q is not one of application, verified_application, system, cloud_engine", s.Name, s.Type)
		return
	}
	switch s.CostSchedule {
	case "", ScheduleNormal, ScheduleFree:
	default:
		l.errorf(&schedAt, "Invalid cost_schedule", "subnet %q: cost_schedule %q is not one of normal, free", s.Name, s.CostSchedule)
		return
	}
	typ, sched := s.EffectiveType(), s.EffectiveCostSchedule()
	if typ == SubnetCloudEngine && sched != ScheduleFree {
		l.errorf(&schedAt, "Invalid cost_schedule", "subnet %q: a cloud_engine subnet must be on the free schedule (the registry requires it); remove cost_schedule or set it to \"free\"", s.Name)
	}
	if sched == ScheduleFree && typ != SubnetApplication && typ != SubnetCloudEngine {
		l.errorf(&schedAt, "Invalid cost_schedule", "subnet %q: the free schedule is only for application or cloud_engine subnets, not %s", s.Name, typ)
	}
	if len(s.Admins) > 0 {
		rented := typ == SubnetApplication && sched == ScheduleFree
		if typ != SubnetCloudEngine && !rented {
			l.errorf(&adminsAt, "Admins not allowed", "subnet %q: admins are allowed only on a cloud_engine or a rented subnet (application on the free schedule); this one is %s on the %s schedule", s.Name, typ, sched)
		}
		if len(s.Admins) > MaxSubnetAdmins {
			l.errorf(&adminsAt, "Too many admins", "subnet %q declares %d admins; at most %d are allowed", s.Name, len(s.Admins), MaxSubnetAdmins)
		}
		seen := map[string]bool{}
		for _, a := range s.Admins {
			if l.checkPrincipal(a, adminsAt, "subnet", s.Name, "admins") {
				p := principal.MustDecode(a).String()
				if seen[p] {
					l.errorf(&adminsAt, "Duplicate admin", "subnet %q lists admin %s twice", s.Name, a)
				}
				seen[p] = true
			}
		}
	}
}

func (l *loader) applyDecommissionedProviders(r *Resources) {
	gone := map[string]bool{}
	for _, p := range r.NodeProviders {
		if p.Decommissioned {
			gone[p.ID] = true
		}
	}
	for _, o := range r.NodeOperators {
		if o.Provider != "" && gone[o.Provider] && !o.Decommissioned {
			o.Decommissioned = true
			o.DecommissionedByProvider = true
		}
	}
}

func (l *loader) applyGuestOSDefault(r *Resources) {
	var def *GuestOSVersion
	for _, v := range r.GuestOSVersions {
		if !v.Default {
			continue
		}
		if def != nil {
			at := l.attr(v.Range, "default")
			l.errorf(&at, "Two default GuestOS versions",
				"guestos_version %q (%s) and %q (%s) are both marked default; at most one may be", def.Name, Site(l.attr(def.Range, "default")), v.Name, Site(at))
			continue
		}
		def = v
	}
	ids := map[string]bool{}
	for _, v := range r.GuestOSVersions {
		ids[v.ID] = true
	}
	l.versionNames = map[string]string{}
	for _, v := range r.GuestOSVersions {
		if !ids[v.Name] && v.Name != VersionNone {
			l.versionNames[v.Name] = v.ID
		}
	}
	for _, n := range r.Nodes {
		if id, isName := l.versionNames[n.GuestOSVersion]; isName {
			at := l.attr(n.Range, "guestos_version")
			l.errorf(&at, "GuestOS version name, not id", "node %q: guestos_version %q is the name of a guestos_version block (id %s), and this field takes an id; write guestos_version = guestos_version.%s.id", n.Name, n.GuestOSVersion, id, n.GuestOSVersion)
			continue
		}
		switch {
		case n.GuestOSVersion == VersionNone:
			n.Version = ""
		case n.GuestOSVersion != "":
			n.Version = n.GuestOSVersion
			n.VersionOverride = def != nil
		case def != nil:
			n.Version = def.ID
		}
	}
}

// applyHostOSDefault gives each node its effective HostOS version, as
// applyGuestOSDefault does for GuestOS: its own, else the default's, and
// none for "none".
func (l *loader) applyHostOSDefault(r *Resources) {
	var def *HostOSVersion
	names := map[string]string{}
	ids := map[string]bool{}
	for _, v := range r.HostOSVersions {
		ids[v.ID] = true
	}
	for _, v := range r.HostOSVersions {
		if !ids[v.Name] && v.Name != VersionNone {
			names[v.Name] = v.ID
		}
		if !v.Default {
			continue
		}
		if def != nil {
			at := l.attr(v.Range, "default")
			l.errorf(&at, "Two default HostOS versions",
				"hostos_version %q (%s) and %q (%s) are both marked default; at most one may be", def.Name, Site(l.attr(def.Range, "default")), v.Name, Site(at))
			continue
		}
		def = v
	}
	l.hostOSNames = names
	for _, n := range r.Nodes {
		if id, isName := names[n.HostOSVersion]; isName {
			at := l.attr(n.Range, "hostos_version")
			l.errorf(&at, "HostOS version name, not id", "node %q: hostos_version %q is the name of a hostos_version block (id %s), and this field takes an id; write hostos_version = hostos_version.%s.id", n.Name, n.HostOSVersion, id, n.HostOSVersion)
			continue
		}
		switch {
		case n.HostOSVersion == VersionNone:
			n.HostOS = ""
		case n.HostOSVersion != "":
			n.HostOS = n.HostOSVersion
			n.HostOSOverride = def != nil
		case def != nil:
			n.HostOS = def.ID
		}
	}
}

func (l *loader) validateNode(n *Node) {
	l.checkPrincipal(n.ID, l.attr(n.Range, "id"), "node", n.Name, "id")
	if n.Subnet != "" {
		l.checkPrincipal(n.Subnet, l.attr(n.Range, "subnet"), "node", n.Name, "subnet")
	}
	if n.Operator != "" {
		l.checkPrincipal(n.Operator, l.attr(n.Range, "operator"), "node", n.Name, "operator")
	}
	if n.Replace && (n.Subnet == "" || n.Decommissioned) {
		at := l.attr(n.Range, "replace")
		l.errorf(&at, "Nothing to replace", "node %q: replace = true marks a subnet member for replacement, but the node is declared in no subnet (or decommissioned); drop replace, or declare its subnet", n.Name)
	}
	if n.ChipID != "" {
		chip, err := DecodeChipID(n.ChipID)
		if err != nil {
			at := l.attr(n.Range, "chip_id")
			l.errorf(&at, "Invalid chip_id", "node %q: %v", n.Name, err)
			return
		}
		n.Chip = chip
	}
}

// DecodeChipID decodes a CHIP_ID given as hex (128 characters) or base64,
// which must hold exactly 64 bytes. A string that decodes both ways (base64
// drawn only from hex digits) is taken in the form that gives 64 bytes.
func DecodeChipID(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	var wrong error
	if b, err := hex.DecodeString(s); err == nil {
		if len(b) == ChipIDLen {
			return b, nil
		}
		wrong = fmt.Errorf("chip_id is %d bytes of hex; a CHIP_ID is %d bytes (%d hex characters)", len(b), ChipIDLen, 2*ChipIDLen)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) == ChipIDLen {
				return b, nil
			}
			if wrong == nil {
				wrong = fmt.Errorf("chip_id is %d bytes of base64; a CHIP_ID is %d bytes", len(b), ChipIDLen)
			}
		}
	}
	if wrong != nil {
		return nil, wrong
	}
	return nil, fmt.Errorf("chip_id %q is neither hex nor base64 of %d bytes", abbreviate(s), ChipIDLen)
}

// checkPrincipal reports id unless it is a valid principal, naming the
// block and field; it returns whether id was valid.
func (l *loader) checkPrincipal(id string, at hcl.Range, kind, name, field string) bool {
	if _, err := principal.Decode(id); err != nil {
		l.errorf(&at, "Invalid principal", "%s %q: %s %q: %v; write the principal's text as dfx or the dashboard prints it", kind, name, field, abbreviate(id), err)
		return false
	}
	return true
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// canonicalize rewrites every principal the configuration holds in its
// canonical text (lowercase), once the load found no error. The text form
// is case-insensitive, so "ABCDE-…" and "abcde-…" are one principal; after
// this, code comparing ids as strings (membership diffs, names in
// messages, state) sees one spelling. Version hashes are left as written:
// they travel as text in the deploy_guestos payload.
func canonicalize(c *Config) {
	one := func(s *string) { *s = canonicalText(*s) }
	all := func(xs []string) {
		for i := range xs {
			one(&xs[i])
		}
	}
	for _, s := range c.Subnets {
		one(&s.ID)
		all(s.Admins)
	}
	for _, p := range c.NodeProviders {
		one(&p.ID)
	}
	for _, o := range c.NodeOperators {
		one(&o.ID)
		one(&o.Provider)
	}
	for _, n := range c.Nodes {
		one(&n.ID)
		one(&n.Subnet)
		one(&n.Operator)
	}
	for _, p := range c.Proposals {
		if p.Body != nil {
			p.Body.IDs(one)
		}
	}
}
