package generate

import (
	"bytes"
	"fmt"
)

// subnetNotes says what drift no proposal alp makes can close: a subnet's
// type, cost schedule or SEV setting, a data center's region, a node's
// chip id.
func (g *gen) subnetNotes() {
	live := g.in.Live
	for _, s := range g.in.Res.Subnets {
		f := live.Subnets[s.ID]
		if !f.Found {
			continue
		}
		name := g.n.subnet(s.ID).word()
		if want := orDefault(s.Type, "application"); f.Type != want {
			g.note("subnet %s: declared type %s, on-chain %s; a subnet's type is fixed when it is created (the registry refuses to change it)", name, want, f.Type)
		}
		if s.CostSchedule != "" && f.CostSchedule != "" && s.CostSchedule != f.CostSchedule {
			g.note("subnet %s: declared cost_schedule %s, on-chain %s; update_subnet does not carry the cost schedule", name, s.CostSchedule, f.CostSchedule)
		}
		if want := s.SevEnabled != nil && *s.SevEnabled; want != f.SevEnabled {
			g.note("subnet %s: declared sev_enabled %v, on-chain %v; the registry refuses to change sev_enabled after a subnet is created", name, want, f.SevEnabled)
		}
	}
	for _, dc := range g.in.Res.DataCenters {
		f := live.DataCenters[dc.ID]
		if f.Found && dc.Region != "" && f.Region != dc.Region {
			g.note("data center %s: declared region %q, on-chain %q; a data center's record is changed by a proposal alp does not make", dc.Name, dc.Region, f.Region)
		}
	}
	for _, n := range g.in.Res.Nodes {
		f := live.Nodes[n.ID]
		if n.Decommissioned || !f.Found || f.Err != "" {
			continue
		}
		if !bytes.Equal(f.Chip, n.Chip) {
			g.note("node %s: its chip id differs from the declared one; a node's chip id is recorded when it registers, and no proposal changes it", n.Name)
		}
		if n.Operator != "" && f.Operator != "" && f.Operator != n.Operator {
			g.note("node %s: declared under operator %s, on-chain under %s; a node's operator is set when it registers, and no proposal alp makes changes it", n.Name, g.n.operator(n.Operator).word(), fmt.Sprint(g.n.operator(f.Operator).word()))
		}
	}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
