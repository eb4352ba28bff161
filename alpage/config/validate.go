package config

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

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
	MaxSubnetAdmins = 10
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
		l.checkPrincipal(p.ID, p.Range, "node_provider", p.Name, "id")
	}
	for _, o := range r.NodeOperators {
		l.checkPrincipal(o.ID, o.Range, "node_operator", o.Name, "id")
		if o.Provider != "" {
			l.checkPrincipal(o.Provider, o.Range, "node_operator", o.Name, "provider")
		}
	}
	for _, v := range r.GuestOSVersions {
		if strings.TrimSpace(v.ID) == "" || strings.ContainsAny(v.ID, " \t\n") {
			l.errorf(&v.Range, "Invalid guestos_version id", "guestos_version %q: id %q must be the version hash", v.Name, v.ID)
		}
	}
	l.applyDecommissionedProviders(r)
	l.applyGuestOSDefault(r)
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
				byID[v.id] = append(byID[v.id], v)
				if len(byID[v.id]) == 1 {
					order = append(order, v.id)
				}
			}
			for _, id := range order {
				refs := byID[id]
				if len(refs) < 2 {
					continue
				}
				sortRefs(refs)
				for _, dup := range refs[1:] {
					at := dup.at
					l.errorf(&at, fmt.Sprintf("Duplicate %s id", kind),
						"%s %q and %s %q both have id %q (at %s and %s); each %s must be declared once",
						kind, names[refs[0].at], kind, names[dup.at], id, site(refs[0].at), site(dup.at), kind)
				}
			}
		}
	}
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
	l.checkPrincipal(s.ID, s.Range, "subnet", s.Name, "id")
	switch s.EffectiveType() {
	case SubnetApplication, SubnetVerifiedApplication, SubnetSystem, SubnetCloudEngine:
	default:
		l.errorf(&s.Range, "Invalid subnet type", "subnet %q: type %q is not one of application, verified_application, system, cloud_engine", s.Name, s.Type)
		return
	}
	switch s.CostSchedule {
	case "", ScheduleNormal, ScheduleFree:
	default:
		l.errorf(&s.Range, "Invalid cost_schedule", "subnet %q: cost_schedule %q is not one of normal, free", s.Name, s.CostSchedule)
		return
	}
	typ, sched := s.EffectiveType(), s.EffectiveCostSchedule()
	if typ == SubnetCloudEngine && sched != ScheduleFree {
		l.errorf(&s.Range, "Invalid cost_schedule", "subnet %q: a cloud_engine subnet must be on the free schedule (the registry requires it); remove cost_schedule or set it to \"free\"", s.Name)
	}
	if sched == ScheduleFree && typ != SubnetApplication && typ != SubnetCloudEngine {
		l.errorf(&s.Range, "Invalid cost_schedule", "subnet %q: the free schedule is only for application or cloud_engine subnets, not %s", s.Name, typ)
	}
	if len(s.Admins) > 0 {
		rented := typ == SubnetApplication && sched == ScheduleFree
		if typ != SubnetCloudEngine && !rented {
			l.errorf(&s.Range, "Admins not allowed", "subnet %q: admins are allowed only on a cloud_engine or a rented subnet (application on the free schedule); this one is %s on the %s schedule", s.Name, typ, sched)
		}
		if len(s.Admins) > MaxSubnetAdmins {
			l.errorf(&s.Range, "Too many admins", "subnet %q declares %d admins; at most %d are allowed", s.Name, len(s.Admins), MaxSubnetAdmins)
		}
		seen := map[string]bool{}
		for _, a := range s.Admins {
			if l.checkPrincipal(a, s.Range, "subnet", s.Name, "admins") {
				p := principal.MustDecode(a).String()
				if seen[p] {
					l.errorf(&s.Range, "Duplicate admin", "subnet %q lists admin %s twice", s.Name, a)
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
			l.errorf(&v.Range, "Two default GuestOS versions",
				"guestos_version %q (%s) and %q (%s) are both marked default; at most one may be", def.Name, site(def.Range), v.Name, site(v.Range))
			continue
		}
		def = v
	}
	for _, n := range r.Nodes {
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

func (l *loader) validateNode(n *Node) {
	l.checkPrincipal(n.ID, n.Range, "node", n.Name, "id")
	if n.Subnet != "" {
		l.checkPrincipal(n.Subnet, n.Range, "node", n.Name, "subnet")
	}
	if n.Operator != "" {
		l.checkPrincipal(n.Operator, n.Range, "node", n.Name, "operator")
	}
	if n.ChipID != "" {
		chip, err := DecodeChipID(n.ChipID)
		if err != nil {
			l.errorf(&n.Range, "Invalid chip_id", "node %q: %v", n.Name, err)
			return
		}
		n.Chip = chip
	}
}

// DecodeChipID decodes a CHIP_ID given as hex (128 characters) or base64,
// which must hold exactly 64 bytes.
func DecodeChipID(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil {
		if len(b) != ChipIDLen {
			return nil, fmt.Errorf("chip_id is %d bytes of hex; a CHIP_ID is %d bytes (%d hex characters)", len(b), ChipIDLen, 2*ChipIDLen)
		}
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			if len(b) != ChipIDLen {
				return nil, fmt.Errorf("chip_id is %d bytes of base64; a CHIP_ID is %d bytes", len(b), ChipIDLen)
			}
			return b, nil
		}
	}
	return nil, fmt.Errorf("chip_id %q is neither hex nor base64 of %d bytes", abbreviate(s), ChipIDLen)
}

// checkPrincipal reports id unless it is a valid principal, naming the
// block and field; it returns whether id was valid.
func (l *loader) checkPrincipal(id string, at hcl.Range, kind, name, field string) bool {
	if _, err := principal.Decode(id); err != nil {
		l.errorf(&at, "Invalid principal", "%s %q: %s %q: %v", kind, name, field, abbreviate(id), err)
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
