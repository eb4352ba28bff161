package generate

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/kinds"
)

// admins generates, per declared subnet whose on-chain admins differ from
// the declared ones, the update_subnet that sets subnet_admins to them.
// Only the admins: of a subnet block's fields they are the one an
// update_subnet carries (type, cost schedule and sev_enabled are notes).
func (g *gen) admins() {
	for _, s := range g.in.Res.Subnets {
		facts := g.in.Live.Subnets[s.ID]
		if !facts.Found {
			continue
		}
		want, have := sortedCopy(s.Admins), sortedCopy(facts.Admins)
		if slices.Equal(want, have) {
			continue
		}
		c := Change{Op: OpAdmins, Subject: s.ID, Target: strings.Join(want, ",")}
		if g.pending[c] {
			continue
		}
		subnet := g.n.subnet(s.ID)
		admins := slices.Clone(want)
		p := &Proposal{Body: &kinds.UpdateSubnet{SubnetID: s.ID, SubnetAdmins: &admins}}
		p.Name = "set-admins-of-" + slug(subnet.word())
		p.Title = fmt.Sprintf("Update subnet %s: set its subnet admins", short(s.ID))
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
		g.add(p)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
