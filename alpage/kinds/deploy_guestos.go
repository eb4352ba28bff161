package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
)

// DeployGuestOS is a "deploy_guestos" proposal's block:
// deploy_guestos_to_all_subnet_nodes.
type DeployGuestOS struct {
	SubnetID         string `hcl:"subnet_id" since:"v0.1.0" doc:"Subnet whose nodes to upgrade (subnet.<name>.id)."`
	ReplicaVersionID string `hcl:"replica_version_id" since:"v0.1.0" doc:"Replica version to deploy to every node in the subnet (guestos_version.<name>.id, or the hash itself). Must be elected by the NNS: preflight checks the registry for a replica_version_<id> record (read via the registry explorer) and refuses an unelected version, since the NNS would reject the proposal. --force submits anyway, and also lets apply proceed when that lookup fails (downgraded to a warning); plan always degrades that way. Preflight additionally resolves the version's release name and election proposal from the public dashboard, which is display-only and degrades to a note when unavailable."`
}

// deployGuestOS is the kind: deploy_guestos_to_all_subnet_nodes.
var deployGuestOS = Define(Def[DeployGuestOS, nns.DeployGuestosToAllSubnetNodesPayload, DeployGuestOSFacts]{
	Name: "deploy_guestos", Generates: "for a subnet whose nodes are declared to run an elected version it does not", Since: "v0.1.0",
	Doc:     "Nested in a proposal of kind \"deploy_guestos\": deploy_guestos_to_all_subnet_nodes.",
	OnChain: Execute[nns.DeployGuestosToAllSubnetNodesPayload](nns.FunctionDeployGuestosToAllSubnetNodes),
	Changes: func(p nns.DeployGuestosToAllSubnetNodesPayload) []Change {
		return []Change{{OpDeploy, p.SubnetID.String(), p.ReplicaVersionID}}
	},
	Seed:     seedDeployGuestOS,
	Generate: generateDeployGuestOS,
})

// DeployGuestOSFacts is what a deploy_guestos proposal's preflight reads.
type DeployGuestOSFacts struct {
	// Subnet is the target's record; nil when the registry has none.
	Subnet *nns.SubnetRecord
	// Version describes the target version.
	Version VersionFacts
}

func (d *DeployGuestOS) Validate(c Checker) {
	c.Principal("subnet_id", d.SubnetID, c.At("", 0, "subnet_id"))
	v := d.ReplicaVersionID
	if v == "" {
		c.Errorf(c.At("", 0, "replica_version_id"), "Missing replica version", "proposal %q: replica_version_id is empty; write the version hash, or guestos_version.<name>.id", c.Proposal())
	}
	if id, isName := c.VersionID(v); isName {
		c.Errorf(c.At("", 0, "replica_version_id"), "GuestOS version name, not id", "proposal %q: replica_version_id %q is the name of a guestos_version block (id %s), and the payload takes the id; write replica_version_id = guestos_version.%s.id", c.Proposal(), v, id, v)
	}
}

func (d *DeployGuestOS) IDs(visit func(*string)) { visit(&d.SubnetID) }

func (d *DeployGuestOS) Build(Live) (Payload[nns.DeployGuestosToAllSubnetNodesPayload], error) {
	subnet, err := onePrincipal("subnet_id", d.SubnetID)
	if err != nil {
		return Payload[nns.DeployGuestosToAllSubnetNodesPayload]{}, err
	}
	version := d.ReplicaVersionID
	return Payload[nns.DeployGuestosToAllSubnetNodesPayload]{
		Value: nns.DeployGuestosToAllSubnetNodesPayload{SubnetID: subnet, ReplicaVersionID: version},
		Render: func(w io.Writer) {
			fmt.Fprintf(w, "  subnet:   %s\n", subnet)
			fmt.Fprintf(w, "  version:  %s\n", version)
		},
	}, nil
}

// Fetch reads the subnet and whether the version is elected.
func (d *DeployGuestOS) Fetch(ctx context.Context, r Reader) (f DeployGuestOSFacts, err error) {
	if f.Subnet, err = r.Subnet(ctx, d.SubnetID); err != nil {
		return f, err
	}
	f.Version = r.Version(ctx, d.ReplicaVersionID)
	return f, nil
}

// Check checks the subnet's current version against the target,
// and whether the target is elected; the second needs no subnet, so it is
// checked without one too.
func (d *DeployGuestOS) Check(live DeployGuestOSFacts, opts Options) ([]Check, bool) {
	var checks []Check
	v := live.Version
	noop := false
	switch {
	case live.Subnet == nil:
		checks = missingSubnet(d.SubnetID)
	case live.Subnet.ReplicaVersionID == d.ReplicaVersionID:
		noop = true
		checks = append(checks, Check{Severity: Warning, Subject: d.ReplicaVersionID, Message: fmt.Sprintf("subnet %s already runs %s; deploying it again changes nothing", d.SubnetID, d.ReplicaVersionID)})
	default:
		checks = append(checks, Check{Severity: OK, Subject: d.ReplicaVersionID, Message: fmt.Sprintf("subnet %s runs %s and moves to %s", d.SubnetID, live.Subnet.ReplicaVersionID, d.ReplicaVersionID)})
	}
	switch {
	case v.ElectedErr != "":
		sev, then := Warning, "check it is elected before the proposal is voted on"
		if opts.ForApply && !opts.Force {
			sev, then = Refused, "apply needs the answer; retry, or pass --force to submit without it"
		}
		checks = append(checks, Check{Severity: sev, Subject: d.ReplicaVersionID, Message: fmt.Sprintf("could not tell whether %s is elected (%s); %s", d.ReplicaVersionID, v.ElectedErr, then)})
	case !v.Elected:
		sev, then := Refused, "the NNS would reject the proposal; elect it first (or --force to submit anyway)"
		if opts.Force {
			sev, then = Warning, "submitting anyway (--force); the NNS will likely reject it"
		}
		checks = append(checks, Check{Severity: sev, Subject: d.ReplicaVersionID, Source: v.ElectedSource, Message: fmt.Sprintf("version %s is not elected (no replica_version_%s record); %s", d.ReplicaVersionID, d.ReplicaVersionID, then)})
	default:
		checks = append(checks, Check{Severity: OK, Subject: d.ReplicaVersionID, Source: v.ElectedSource, Message: fmt.Sprintf("version %s is elected", d.ReplicaVersionID)})
	}
	switch {
	case v.ReleaseErr != "":
		checks = append(checks, Check{Severity: Note, Source: v.ReleaseSource, Message: fmt.Sprintf("release name unavailable (%s)", v.ReleaseErr)})
	case v.ProposalID == 0:
		checks = append(checks, Check{Severity: Note, Source: v.ReleaseSource, Message: fmt.Sprintf("no executed election proposal names %s", d.ReplicaVersionID)})
	default:
		name := v.Release
		if name == "" {
			name = "(unnamed)"
		}
		checks = append(checks, Check{Severity: Note, Source: v.ReleaseSource, Message: fmt.Sprintf("release %s, elected by proposal %d", name, v.ProposalID)})
	}
	return checks, noop
}

// Closes is the subnet running the version.
func (d *DeployGuestOS) Closes() []Change {
	return []Change{{OpDeploy, d.SubnetID, d.ReplicaVersionID}}
}

// HCL writes the block as alp plan --generate does.
func (d *DeployGuestOS) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  deploy_guestos {\n    subnet_id          = %s\n    replica_version_id = %s\n  }\n", ref(d.SubnetID), ref(d.ReplicaVersionID))
}

// Seed seeds the target version's record, the subnet with its members,
// and the version the subnet runs.
func seedDeployGuestOS(ctx context.Context, s Seeder, pl nns.DeployGuestosToAllSubnetNodesPayload) error {
	if err := s.Records(ctx, nns.ReplicaVersionRecordKey(pl.ReplicaVersionID)); err != nil {
		return err
	}
	if err := s.SubnetWithMembers(ctx, pl.SubnetID); err != nil {
		return err
	}
	rec, ok, err := s.Subnet(pl.SubnetID)
	if err != nil {
		return err
	}
	if ok && rec.ReplicaVersionID != "" {
		return s.Records(ctx, nns.ReplicaVersionRecordKey(rec.ReplicaVersionID))
	}
	return nil
}

// Generate proposes, per declared subnet, the deploy_guestos that makes it
// run the elected version its nodes are declared to run.
func generateDeployGuestOS(d *Drift) (out []Generated, notes []string) {
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	live := d.Chain
	for _, s := range d.Fleet.Subnets {
		facts := live.Subnets[s.ID]
		if !facts.Found {
			continue
		}
		var versions []string
		for _, n := range d.Fleet.Nodes {
			if n.Subnet == s.ID && !n.Decommissioned && n.Version != "" && !slices.Contains(versions, n.Version) {
				versions = append(versions, n.Version)
			}
		}
		subnet := d.n.subnet(s.ID)
		switch {
		case len(versions) == 0:
			continue
		case len(versions) > 1:
			slices.Sort(versions)
			var words []string
			for _, v := range versions {
				words = append(words, d.n.version(v).word())
			}
			note("subnet %s: its nodes are declared to run %d versions (%s), but a subnet runs one; declare one to get a deploy_guestos", subnet.word(), len(versions), strings.Join(words, ", "))
			continue
		}
		v := versions[0]
		version := d.n.version(v)
		if v == facts.ReplicaVersion {
			notes = append(notes, lagging(d, s.ID, v)...)
			continue
		}
		elected, read := live.Elected[v]
		switch {
		case !read || (!elected && live.ElectedErr != ""):
			note("subnet %s: whether version %s is elected could not be read (%s); no deploy_guestos is generated", subnet.word(), version.word(), live.ElectedErr)
			continue
		case !elected:
			note("subnet %s: its nodes are declared to run %s, which the NNS has not elected; electing a version is no proposal alp makes", subnet.word(), version.word())
			continue
		}
		if d.Pending[Change{Op: OpDeploy, Subject: s.ID, Target: v}] {
			continue
		}
		p := Generated{Body: &DeployGuestOS{SubnetID: s.ID, ReplicaVersionID: v}}
		p.Name = fmt.Sprintf("deploy-%s-to-%s", slug(version.word()), slug(subnet.word()))
		p.Title = fmt.Sprintf("Update subnet %s to GuestOS version %s", Short(s.ID), abbrev(v))
		label := version.word()
		if i := slices.IndexFunc(d.Fleet.Versions, func(b FleetVersion) bool { return b.ID == v }); i >= 0 && d.Fleet.Versions[i].Label != "" {
			label = d.Fleet.Versions[i].Label
		}
		running := facts.ReplicaVersion
		if running == "" {
			running = "no version"
		}
		p.Summary = fmt.Sprintf("Update subnet %s to GuestOS version [%s](https://dashboard.internetcomputer.org/release/%s).\n\n"+
			"Motivation: the nodes of the subnet are declared to run %s; the subnet runs %s now.\n", s.ID, v, v, label, running)
		out = append(out, p)
	}
	for _, n := range d.Fleet.Nodes {
		runs := live.Versions[n.ID]
		if n.Subnet != "" || n.Decommissioned || n.Version == "" || runs == "" || runs == n.Version {
			continue
		}
		note("node %s is unassigned and runs %s, not %s: the version of unassigned nodes is set by a proposal alp does not make (deploy_guestos upgrades a subnet)", n.Name, abbrev(runs), d.n.version(n.Version).word())
	}
	return out, notes
}

// lagging notes the nodes of subnet that report another version than v,
// which its record already names: they have not upgraded yet, and no
// proposal makes them.
func lagging(d *Drift, subnet, v string) (notes []string) {
	for _, n := range d.Fleet.Nodes {
		runs := d.Chain.Versions[n.ID]
		if n.Subnet != subnet || n.Decommissioned || n.Version != v || runs == "" || runs == v {
			continue
		}
		notes = append(notes, fmt.Sprintf("node %s runs %s, but subnet %s's record already names %s: the node has not upgraded to it yet, which no proposal changes", n.Name, abbrev(runs), d.n.subnet(subnet).word(), d.n.version(v).word()))
	}
	return notes
}
