package preflight

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/alpage/source"
	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Options change how strict the checks are.
type Options struct {
	// Force submits an unelected deploy_guestos version anyway and lets a
	// failed elected lookup pass; both become warnings.
	Force bool
	// ForApply is set by apply: a failed elected lookup then refuses unless
	// Force. Plan always degrades it to a warning.
	ForApply bool
	// Names maps ids to the names the config gives them (NamesOf), so a
	// message reads "node n4 (yhgsq-…)" instead of a bare principal.
	Names map[string]string
}

// Evaluate runs the preflight of p over live state. It is pure: everything it
// reads is in live. PayloadSHA256 is left for the caller to fill in.
func Evaluate(p *config.Proposal, live *Snapshot, opts Options) Report {
	var (
		checks []Check
		noop   bool
	)
	switch p.Kind {
	case config.KindMembership:
		checks, noop = membership(p.Membership, live)
	case config.KindDeployGuestOS:
		checks, noop = deployGuestOS(p.DeployGuestOS, live, opts)
	case config.KindUpdateSubnet:
		checks, noop = updateSubnet(p.UpdateSubnet, live)
	case config.KindRemoveNodes:
		checks, noop = removeNodes(p.RemoveNodes, live)
	case config.KindRemoveNodeOperators:
		checks, noop = removeNodeOperators(p.RemoveNodeOperators, live)
	case config.KindRemoveNodeProvider:
		checks, noop = removeNodeProvider(p.RemoveNodeProvider, live)
	default:
		checks = []Check{{Severity: Refused, Message: fmt.Sprintf("kind %q has no preflight", p.Kind)}}
	}
	names := withLabels(opts.Names, p)
	for i := range checks {
		checks[i].Message = withNames(checks[i].Message, names)
		if rank(checks[i].Severity) > rank(Warning) {
			checks[i].At = where(p, checks[i])
		}
	}
	return Report{Name: p.Name, Kind: string(p.Kind), Verdict: verdict(checks, noop), RegistryVersion: live.RegistryVersion, Checks: checks}
}

// where is the file:line of what check c of p is about: its update_subnet
// field, else its subject (an id or version as the body writes it), else
// the proposal's block; "" for a proposal no file declares.
func where(p *config.Proposal, c Check) string {
	key := c.Field
	if key == "" {
		key = c.Subject
	}
	r := p.Where(key)
	if r.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}

// NamesOf maps every declared resource id to its block name.
func NamesOf(r *config.Resources) map[string]string {
	names := map[string]string{}
	for _, s := range r.Subnets {
		names[s.ID] = s.Name
	}
	for _, p := range r.NodeProviders {
		names[p.ID] = p.Name
	}
	for _, o := range r.NodeOperators {
		names[o.ID] = o.Name
	}
	for _, v := range r.GuestOSVersions {
		names[v.ID] = v.Name
	}
	for _, n := range r.Nodes {
		names[n.ID] = n.Name
	}
	return names
}

// withLabels adds to names the label of each add, remove and node block of
// p whose id no resource block names (the schema's "optional
// human-readable name"); a block name wins over a label.
func withLabels(names map[string]string, p *config.Proposal) map[string]string {
	var refs []config.NodeRef
	switch {
	case p.Membership != nil:
		refs = append(append(refs, p.Membership.Add...), p.Membership.Remove...)
	case p.RemoveNodes != nil:
		refs = p.RemoveNodes.Nodes
	}
	out, cloned := names, false
	for _, r := range refs {
		if r.Label == "" || names[r.ID] != "" {
			continue
		}
		if !cloned {
			out, cloned = maps.Clone(names), true // the caller's map stays as it was
			if out == nil {
				out = map[string]string{}
			}
		}
		out[r.ID] = r.Label
	}
	return out
}

// withNames writes "name (id)" for each id in msg that has a name, except
// inside a registry key (replica_version_<id>).
func withNames(msg string, names map[string]string) string {
	if len(names) == 0 {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		end := i
		for end < len(msg) && msg[end] != ' ' && msg[end] != ',' && msg[end] != ';' && msg[end] != '(' && msg[end] != ')' {
			end++
		}
		word := msg[i:end]
		if name, ok := names[word]; ok && name != "" {
			b.WriteString(name + " (" + word + ")")
		} else {
			b.WriteString(word)
		}
		if end < len(msg) {
			b.WriteByte(msg[end])
			end++
		}
		i = end
	}
	return b.String()
}

// members is the subnet's membership as principal text.
func members(rec *nns.SubnetRecord) []string {
	out := make([]string, 0, len(rec.Membership))
	for _, m := range rec.Membership {
		if p, err := principal.FromBytes(m); err == nil {
			out = append(out, p.String())
		}
	}
	return out
}

func missingSubnet(id string) []Check {
	return []Check{{Severity: Refused, Subject: id, Message: fmt.Sprintf("subnet %s is not in the registry; check subnet_id", id)}}
}

// membership checks each node added and removed. Without the subnet's
// record it still says what is wrong with each node added (unregistered,
// or a member elsewhere); whether one is a member already or needs a chip
// cannot be told, and no node can leave a subnet the registry does not
// have, which the refusal already says.
func membership(m *config.Membership, live *Snapshot) ([]Check, bool) {
	if live.Subnet == nil {
		checks := missingSubnet(m.SubnetID)
		for _, n := range m.Add {
			for _, c := range nodeJoins(n.ID, live.Nodes[n.ID], m.SubnetID, false, nns.IsCloudEngineNode(live.Nodes[n.ID].RewardType)) {
				if c.Severity != OK {
					checks = append(checks, c)
				}
			}
		}
		return checks, false
	}
	in := members(live.Subnet)
	after := membershipAfter(m, in)
	sev := live.Subnet.Features != nil && live.Subnet.Features.SevEnabled != nil && *live.Subnet.Features.SevEnabled
	var checks []Check
	changes := 0
	for _, n := range m.Add {
		switch {
		case slices.Contains(in, n.ID) && count(after, n.ID) > 1:
			checks = append(checks, Check{Severity: Refused, Subject: n.ID, Message: fmt.Sprintf("node %s is already a member of subnet %s; the registry would list it twice and refuse the proposal (Repeated nodes in subnet); drop it from add", n.ID, m.SubnetID)})
			continue
		case slices.Contains(in, n.ID):
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("node %s is already a member of subnet %s; adding it changes nothing", n.ID, m.SubnetID)})
			continue
		}
		checks = append(checks, nodeJoins(n.ID, live.Nodes[n.ID], m.SubnetID, sev, live.Subnet.SubnetType.Name() == "cloud_engine")...)
		changes++
	}
	for _, n := range m.Remove {
		if !slices.Contains(in, n.ID) {
			checks = append(checks, Check{Severity: Refused, Subject: n.ID, Message: fmt.Sprintf("node %s is not a member of subnet %s; the registry refuses the whole proposal (Nodes that should be removed do not belong to the provided subnet); drop it from remove", n.ID, m.SubnetID)})
			continue
		}
		checks = append(checks, Check{Severity: OK, Subject: n.ID, Message: fmt.Sprintf("node %s is a member of subnet %s; it leaves it", n.ID, m.SubnetID)})
		changes++
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "every add and remove is a no-op, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// nodeJoins checks node id, not a member of subnet yet, joining it; sev
// says the subnet is SEV-enabled. A node the registry holds no record of
// (or could not be read) is only that; one it holds is told every reason
// it cannot join: a member elsewhere, without a chip for a SEV subnet, and
// a type4 node outside a cloud engine or another node in one (engine says
// the subnet is a cloud engine).
func nodeJoins(id string, f NodeFacts, subnet string, sev, engine bool) []Check {
	switch {
	case f.Err != "":
		return []Check{{Severity: Warning, Subject: id, Message: fmt.Sprintf("could not read node %s from the registry (%s); check it is registered and in no subnet", id, f.Err)}}
	case !f.Registered:
		return []Check{{Severity: Refused, Subject: id, Message: fmt.Sprintf("node %s is not registered; the registry rejects adding it", id)}}
	}
	var checks []Check
	if f.MemberOf != "" {
		checks = append(checks, Check{Severity: Refused, Subject: id, Message: fmt.Sprintf("node %s is a member of another subnet, %s; the registry refuses a node in two subnets, so remove it there first", id, f.MemberOf)})
	}
	if sev && !f.HasChip {
		checks = append(checks, Check{Severity: Refused, Subject: id, Message: fmt.Sprintf("node %s has no chip id and subnet %s is SEV-enabled; the registry's invariants refuse a SEV subnet member without one", id, subnet)})
	}
	if engineNode := nns.IsCloudEngineNode(f.RewardType); engineNode != engine {
		what := "is not a cloud engine, and the registry's invariants allow type4 nodes only in a cloud engine"
		if engine {
			what = "is a cloud engine, and the registry's invariants allow only type4 nodes in one"
		}
		checks = append(checks, Check{Severity: Refused, Subject: id, Message: fmt.Sprintf("node %s has node_reward_type %s; subnet %s %s", id, orNone(nns.RewardTypeName(f.RewardType)), subnet, what)})
	}
	if len(checks) == 0 {
		checks = append(checks, Check{Severity: OK, Subject: id, Message: fmt.Sprintf("node %s is registered and in no subnet; it joins subnet %s", id, subnet)})
	}
	return checks
}

// membershipAfter is the membership change_subnet_membership writes: the
// added nodes, then the current members, less the removed ones, with
// adjacent repeats collapsed (do_change_subnet_membership.rs and
// replace_subnet_record_membership upstream). A repeat left in it is the
// registry's "Repeated nodes in subnet" refusal.
func membershipAfter(m *config.Membership, current []string) []string {
	var out []string
	for _, n := range m.Add {
		out = append(out, n.ID)
	}
	out = append(out, current...)
	out = slices.DeleteFunc(out, func(id string) bool {
		return slices.ContainsFunc(m.Remove, func(r config.NodeRef) bool { return r.ID == id })
	})
	return slices.Compact(out)
}

func count(ids []string, id string) int {
	n := 0
	for _, x := range ids {
		if x == id {
			n++
		}
	}
	return n
}

// deployGuestOS checks the subnet's current version against the target,
// and whether the target is elected; the second needs no subnet, so it is
// checked without one too.
func deployGuestOS(d *config.DeployGuestOS, live *Snapshot, opts Options) ([]Check, bool) {
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
		checks = append(checks, Check{Severity: Note, Source: source.DashboardLabel, Message: fmt.Sprintf("release name unavailable (%s)", v.ReleaseErr)})
	case v.ProposalID == 0:
		checks = append(checks, Check{Severity: Note, Source: source.DashboardLabel, Message: fmt.Sprintf("no executed election proposal names %s", d.ReplicaVersionID)})
	default:
		name := v.Release
		if name == "" {
			name = "(unnamed)"
		}
		checks = append(checks, Check{Severity: Note, Source: source.DashboardLabel, Message: fmt.Sprintf("release %s, elected by proposal %d", name, v.ProposalID)})
	}
	return checks, noop
}

func removeNodes(r *config.RemoveNodes, live *Snapshot) ([]Check, bool) {
	var checks []Check
	changes := 0
	for _, n := range r.Nodes {
		f := live.Nodes[n.ID]
		switch {
		case f.Err != "":
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("could not read node %s from the registry (%s); check it is registered and in no subnet", n.ID, f.Err)})
			changes++
		case !f.Registered:
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("node %s is no longer registered; removing it changes nothing", n.ID)})
		case f.MemberOf != "":
			checks = append(checks, Check{Severity: Refused, Subject: n.ID, Message: fmt.Sprintf("node %s is still a member of subnet %s; the registry rejects removing it, so take it out of the subnet with a membership proposal first", n.ID, f.MemberOf)})
			changes++
		default:
			checks = append(checks, Check{Severity: OK, Subject: n.ID, Message: fmt.Sprintf("node %s is registered and in no subnet; it will be deregistered", n.ID)})
			changes++
		}
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "no node named is still registered, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

func removeNodeOperators(r *config.RemoveNodeOperators, live *Snapshot) ([]Check, bool) {
	var checks []Check
	changes := 0
	for _, op := range r.Operators {
		f := live.Operators[op]
		switch {
		case f.RegisteredErr != "":
			// Whether it owns nodes is the explorer's to say: asked below.
			checks = append(checks, Check{Severity: Warning, Subject: op, Message: fmt.Sprintf("could not read operator %s from the registry (%s); check it has a record", op, f.RegisteredErr)})
		case !f.Registered:
			checks = append(checks, Check{Severity: Warning, Subject: op, Message: fmt.Sprintf("operator %s has no registry record; removing it changes nothing", op)})
			continue
		}
		changes++
		switch {
		case f.NodesErr != "":
			checks = append(checks, Check{Severity: Warning, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("could not list the nodes of operator %s (%s); the registry silently skips an operator that still owns nodes", op, f.NodesErr)})
		case len(f.Nodes) > 0:
			checks = append(checks, Check{Severity: Flagged, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("operator %s still owns %d node(s) (%s); the registry silently skips it, so deregister them first", op, len(f.Nodes), shortList(f.Nodes))})
		default:
			checks = append(checks, Check{Severity: OK, Subject: op, Source: f.NodesSource, Message: fmt.Sprintf("operator %s owns no nodes; its record will be deleted", op)})
		}
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "no operator named has a record, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// removeNodeProvider checks that governance knows the provider and, as
// the registry says whether it does or not, that it has no operators (an
// unknown one is told only when it has some).
func removeNodeProvider(r *config.RemoveNodeProvider, live *Snapshot) ([]Check, bool) {
	id, f := r.NodeProviderID, live.Provider
	checks := []Check{{Severity: OK, Subject: id, Message: fmt.Sprintf("governance knows node provider %s", id)}}
	if !f.Known {
		checks[0] = Check{Severity: Refused, Subject: id, Message: fmt.Sprintf("governance does not know node provider %s; it rejects removing an unknown provider, so check node_provider_id", id)}
	}
	if len(f.Operators) > 0 {
		checks = append(checks, Check{Severity: Flagged, Subject: id, Message: fmt.Sprintf("node provider %s still has %d operator(s) (%s); removing it orphans them, so remove them first", id, len(f.Operators), shortList(f.Operators))})
	} else if f.Known {
		checks = append(checks, Check{Severity: OK, Subject: id, Message: fmt.Sprintf("node provider %s has no operators left", id)})
	}
	return checks, false
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// maxListedIDs is how many ids a check names before it says how many
// more there are.
const maxListedIDs = 5

// shortList names at most maxListedIDs ids: "a, b, c" or "a, b, c, d, e
// and 37 more".
func shortList(ids []string) string {
	if len(ids) <= maxListedIDs {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:maxListedIDs], ", "), len(ids)-maxListedIDs)
}
