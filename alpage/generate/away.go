package generate

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
	"alpnib.dev/alpage/state"
	"alpnib.dev/ic/principal"
)

// Away says how a change moves the fleet away from its declaration: the
// resource and its line that would then drift, and what to declare
// instead. It returns "" when the declaration already agrees with the
// change, or declares nothing the change touches. One sentence serves
// preflight (before a proposal is made), `alp status` (after it executed)
// and --generate (which then does not undo it).
func Away(res *config.Resources, c Change) string {
	switch c.Op {
	case kinds.OpAdd, kinds.OpRemove:
		n := nodeByID(res, c.Subject)
		if n == nil {
			return ""
		}
		s := subnetName(res, c.Target)
		switch {
		case c.Op == kinds.OpAdd && !sameID(n.Subnet, c.Target):
			return fmt.Sprintf("node %s (%s) is declared %s, not in subnet %s: declare subnet = subnet.%s.id",
				n.Name, config.Site(n.Range), inSubnet(res, n.Subnet), s, s)
		case c.Op == kinds.OpRemove && sameID(n.Subnet, c.Target):
			return fmt.Sprintf("node %s (%s) is declared in subnet %s, which it leaves: remove its subnet line", n.Name, config.Site(n.Range), s)
		}
	case kinds.OpDeploy:
		var away []string
		for _, n := range res.Nodes {
			if sameID(n.Subnet, c.Subject) && n.Version != "" && !n.Decommissioned && n.Version != c.Target {
				away = append(away, fmt.Sprintf("%s (%s)", n.Name, config.Site(n.Range)))
			}
		}
		if len(away) == 0 {
			return ""
		}
		return fmt.Sprintf("node(s) %s of subnet %s are declared on another GuestOS version than %s: declare that one for them (guestos_version, or the default)",
			strings.Join(away, ", "), subnetName(res, c.Subject), versionName(res, c.Target))
	case kinds.OpAdmins:
		s := subnetByID(res, c.Subject)
		if s == nil || s.Admins == nil {
			return ""
		}
		if declared := kinds.AdminsTarget(s.Admins); declared != c.Target {
			return fmt.Sprintf("subnet %s (%s) declares admins [%s], not [%s]: declare those", s.Name, config.Site(s.Range),
				declared, c.Target)
		}
	case kinds.OpRemoveNode:
		if n := nodeByID(res, c.Subject); n != nil && !n.Decommissioned {
			return fmt.Sprintf("node %s (%s) is declared registered, not deregistered: declare decommissioned = true", n.Name, config.Site(n.Range))
		}
	case kinds.OpRemoveOperator:
		for _, o := range res.NodeOperators {
			if sameID(o.ID, c.Subject) && !o.Decommissioned {
				return fmt.Sprintf("node operator %s (%s) is declared, not deleted: declare decommissioned = true", o.Name, config.Site(o.Range))
			}
		}
	case kinds.OpRemoveProvider:
		for _, p := range res.NodeProviders {
			if sameID(p.ID, c.Subject) && !p.Decommissioned {
				return fmt.Sprintf("node provider %s (%s) is declared, not removed: declare decommissioned = true", p.Name, config.Site(p.Range))
			}
		}
	}
	return ""
}

// AwayOf is Away for every change of a declared proposal, in its order.
func AwayOf(res *config.Resources, p *config.Proposal) []string {
	if res == nil || p == nil {
		return nil
	}
	var out []string
	for _, c := range ChangesOf(p) {
		if s := Away(res, c); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// Made are the changes of the declared proposals st records as executed
// or still under way (open, adopted, or not yet read back): the fleet
// moved, or will move, as they say, so --generate does not undo them.
func Made(ps []*config.Proposal, st *state.State) map[Change]string {
	out := map[Change]string{}
	for _, p := range ps {
		e := st.Proposals[p.Name]
		if e == nil || (e.Status.Terminal() && e.Status != state.StatusExecuted) {
			continue
		}
		for _, c := range ChangesOf(p) {
			out[c] = fmt.Sprintf("%s (proposal %d, %s)", p.Name, e.ProposalID, statusWord(e.Status))
		}
	}
	return out
}

func statusWord(s state.Status) string {
	if s == "" {
		return "submitted"
	}
	return strings.ToLower(string(s))
}

// undoes is the change of made that c reverses, if any.
func undoes(c Change, made map[Change]string) (Change, bool) {
	for m := range made {
		if c.Subject != m.Subject {
			continue
		}
		switch {
		case c.Op == kinds.OpRemove && m.Op == kinds.OpAdd && c.Target == m.Target,
			c.Op == kinds.OpAdd && m.Op == kinds.OpRemove && c.Target == m.Target,
			c.Op == kinds.OpDeploy && m.Op == kinds.OpDeploy && c.Target != m.Target,
			c.Op == kinds.OpAdmins && m.Op == kinds.OpAdmins && c.Target != m.Target:
			return m, true
		}
	}
	return Change{}, false
}

func sameID(a, b string) bool {
	if a == b {
		return true
	}
	pa, err1 := principal.Decode(a)
	pb, err2 := principal.Decode(b)
	return err1 == nil && err2 == nil && pa == pb
}

func nodeByID(res *config.Resources, id string) *config.Node {
	for _, n := range res.Nodes {
		if sameID(n.ID, id) {
			return n
		}
	}
	return nil
}

func subnetByID(res *config.Resources, id string) *config.Subnet {
	for _, s := range res.Subnets {
		if sameID(s.ID, id) {
			return s
		}
	}
	return nil
}

func subnetName(res *config.Resources, id string) string {
	if s := subnetByID(res, id); s != nil {
		return s.Name
	}
	return id
}

func inSubnet(res *config.Resources, id string) string {
	if id == "" {
		return "in no subnet"
	}
	return "in subnet " + subnetName(res, id)
}

func versionName(res *config.Resources, id string) string {
	for _, v := range res.GuestOSVersions {
		if v.ID == id {
			return fmt.Sprintf("%s (%s)", v.Name, id)
		}
	}
	return id
}
