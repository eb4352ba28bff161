package generate

import (
	"fmt"
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/kinds"
)

// deploys generates, per declared subnet, the deploy_guestos that makes it
// run the elected version its nodes are declared to run.
func (g *gen) deploys() {
	live := g.in.Live
	for _, s := range g.in.Res.Subnets {
		facts := live.Subnets[s.ID]
		if !facts.Found {
			continue
		}
		var versions []string
		for _, n := range g.in.Res.Nodes {
			if n.Subnet == s.ID && !n.Decommissioned && n.Version != "" && !slices.Contains(versions, n.Version) {
				versions = append(versions, n.Version)
			}
		}
		subnet := g.n.subnet(s.ID)
		switch {
		case len(versions) == 0:
			continue
		case len(versions) > 1:
			slices.Sort(versions)
			var words []string
			for _, v := range versions {
				words = append(words, g.n.version(v).word())
			}
			g.note("subnet %s: its nodes are declared to run %d versions (%s), but a subnet runs one; declare one to get a deploy_guestos", subnet.word(), len(versions), strings.Join(words, ", "))
			continue
		}
		v := versions[0]
		version := g.n.version(v)
		if v == facts.ReplicaVersion {
			g.lagging(s, v)
			continue
		}
		elected, read := live.Elected[v]
		switch {
		case !read || (!elected && live.ElectedErr != ""):
			g.note("subnet %s: whether version %s is elected could not be read (%s); no deploy_guestos is generated", subnet.word(), version.word(), live.ElectedErr)
			continue
		case !elected:
			g.note("subnet %s: its nodes are declared to run %s, which the NNS has not elected; electing a version is no proposal alp makes", subnet.word(), version.word())
			continue
		}
		c := Change{Op: OpDeploy, Subject: s.ID, Target: v}
		if g.pending[c] {
			continue
		}
		p := &Proposal{Body: &kinds.DeployGuestOS{SubnetID: s.ID, ReplicaVersionID: v}}
		p.Name = fmt.Sprintf("deploy-%s-to-%s", slug(version.word()), slug(subnet.word()))
		p.Title = fmt.Sprintf("Update subnet %s to GuestOS version %s", short(s.ID), abbrev(v))
		label := version.word()
		if vb := g.versionBlock(v); vb != nil && vb.Label != "" {
			label = vb.Label
		}
		p.Summary = fmt.Sprintf("Update subnet %s to GuestOS version [%s](https://dashboard.internetcomputer.org/release/%s).\n\n"+
			"Motivation: the nodes of the subnet are declared to run %s; the subnet runs %s now.\n", s.ID, v, v, label, orNone(facts.ReplicaVersion))
		g.add(p)
	}
	for _, n := range g.in.Res.Nodes {
		vf, ok := live.Versions[n.ID]
		if n.Subnet != "" || n.Decommissioned || n.Version == "" || !ok || vf.Version == "" || vf.Version == n.Version {
			continue
		}
		g.note("node %s is unassigned and runs %s, not %s: the version of unassigned nodes is set by a proposal alp does not make (deploy_guestos upgrades a subnet)", n.Name, abbrev(vf.Version), g.n.version(n.Version).word())
	}
}

// lagging notes the nodes of subnet s that report another version than
// v, which its record already names: they have not upgraded yet, and no
// proposal makes them.
func (g *gen) lagging(s *config.Subnet, v string) {
	for _, n := range g.in.Res.Nodes {
		vf, ok := g.in.Live.Versions[n.ID]
		if n.Subnet != s.ID || n.Decommissioned || n.Version != v || !ok || vf.Version == "" || vf.Version == v {
			continue
		}
		g.note("node %s runs %s, but subnet %s's record already names %s: the node has not upgraded to it yet, which no proposal changes", n.Name, abbrev(vf.Version), g.n.subnet(s.ID).word(), g.n.version(v).word())
	}
}

func (g *gen) versionBlock(id string) *config.GuestOSVersion {
	for _, v := range g.in.Res.GuestOSVersions {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// abbrev is a version hash's first 8 characters, as release titles write it.
func abbrev(v string) string {
	if len(v) > 8 {
		return v[:8]
	}
	return v
}

func orNone(s string) string {
	if s == "" {
		return "no version"
	}
	return s
}
