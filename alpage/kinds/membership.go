package kinds

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
	"alpnib.dev/ic/principal"
)

// Membership is a "membership" proposal's block: change_subnet_membership,
// adding and removing nodes of a subnet.
type Membership struct {
	SubnetID string    `hcl:"subnet_id" since:"v0.3.0" doc:"Subnet whose membership changes (subnet.<name>.id)."`
	Add      []NodeRef `hcl:"add,block" since:"v0.3.0" doc:"A node to add to the subnet; repeatable. See the add / remove block."`
	Remove   []NodeRef `hcl:"remove,block" since:"v0.3.0" doc:"A node to remove from the subnet; repeatable. See the add / remove block."`
}

// membership is the kind: change_subnet_membership.
var membership = Define(Def[Membership, nns.ChangeSubnetMembershipPayload, MembershipFacts]{
	Name: "membership", Generates: "for nodes declared in a subnet they are not in, or out of one they are in", Since: "v0.3.0", Formerly: "resize",
	Doc: "Nested in a proposal of kind \"membership\": change_subnet_membership. Holds add/remove node blocks. Renamed from resize in v0.3.0; a config written for v0.2.0 or earlier must rename the block and its kind.",
	Nested: []BlockDoc{{Header: `add / remove { }`, Since: "v0.1.0", Type: reflect.TypeFor[NodeRef](),
		Doc: "Inside a membership block: a node to add to or remove from the subnet."}},
	OnChain:  Execute[nns.ChangeSubnetMembershipPayload](nns.FunctionChangeSubnetMembership),
	Changes:  membershipChanges,
	Seed:     seedMembership,
	Generate: generateMembership,
	Labels: func(m *Membership) []NodeRef {
		return append(append([]NodeRef(nil), m.Add...), m.Remove...)
	},
})

// MembershipFacts is what a membership proposal's preflight reads.
type MembershipFacts struct {
	// Subnet is the target's record; nil when the registry has none.
	Subnet *nns.SubnetRecord
	// Nodes holds what is known of each node added.
	Nodes map[string]NodeFacts
	// Health holds the health of each node added and of each member.
	Health map[string]HealthFacts
	// Places holds where each node added and each member is.
	Places Places
}

func (m *Membership) Validate(c Checker) {
	c.Principal("subnet_id", m.SubnetID, c.At("", 0, "subnet_id"))
	for i, n := range m.Add {
		c.Principal("add.id", n.ID, c.At("add", i, "id"))
		c.Once("node", "add", n.ID, c.At("add", i, "id"))
	}
	for i, n := range m.Remove {
		c.Principal("remove.id", n.ID, c.At("remove", i, "id"))
		c.Once("node", "remove", n.ID, c.At("remove", i, "id"))
	}
	if len(m.Add) == 0 && len(m.Remove) == 0 {
		c.Errorf(c.Header(), "Empty membership change", "proposal %q adds and removes no node; add at least one add { } or remove { } block", c.Proposal())
	}
}

func (m *Membership) IDs(visit func(*string)) {
	visit(&m.SubnetID)
	refIDs(m.Add, visit)
	refIDs(m.Remove, visit)
}

func (m *Membership) Build(Live) (Payload[nns.ChangeSubnetMembershipPayload], error) {
	var out Payload[nns.ChangeSubnetMembershipPayload]
	subnet, err := onePrincipal("subnet_id", m.SubnetID)
	if err != nil {
		return out, err
	}
	add, err := principals("add.id", nodeIDs(m.Add))
	if err != nil {
		return out, err
	}
	remove, err := principals("remove.id", nodeIDs(m.Remove))
	if err != nil {
		return out, err
	}
	out.Value = nns.ChangeSubnetMembershipPayload{SubnetID: subnet, NodeIDsAdd: add, NodeIDsRemove: remove}
	out.Render = func(w io.Writer) {
		fmt.Fprintf(w, "  subnet:   %s\n", subnet)
		writeList(w, "add", add)
		writeList(w, "remove", remove)
	}
	return out, nil
}

// Fetch reads the subnet and the nodes added; the nodes are read without
// the subnet too: what is wrong with each is told beside the missing
// subnet.
func (m *Membership) Fetch(ctx context.Context, r Reader) (f MembershipFacts, err error) {
	if f.Subnet, err = r.Subnet(ctx, m.SubnetID); err != nil {
		return f, err
	}
	if len(m.Add) > 0 {
		if f.Nodes, err = r.Nodes(ctx, nodeIDs(m.Add)); err != nil {
			return f, err
		}
	}
	ids := nodeIDs(m.Add)
	if f.Subnet != nil {
		ids = append(ids, members(f.Subnet)...)
	}
	if len(ids) > 0 {
		ids = slices.Compact(slices.Sorted(slices.Values(ids)))
		f.Health = r.Health(ctx, ids)
		if f.Subnet != nil {
			f.Places = ReadPlaces(ctx, r, ids)
		}
	}
	return f, nil
}

// Check checks each node added and removed. Without the subnet's
// record it still says what is wrong with each node added (unregistered,
// or a member elsewhere); whether one is a member already or needs a chip
// cannot be told, and no node can leave a subnet the registry does not
// have, which the refusal already says. A node added that is not known
// healthy is refused (with Force, a warning); a removal that leaves the
// subnet too few healthy members to make progress is a warning.
func (m *Membership) Check(live MembershipFacts, o Options) ([]Check, bool) {
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
		if live.Nodes[n.ID].Registered {
			checks = append(checks, joinHealth(n.ID, live.Health[n.ID], o.Force))
		}
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
	if changes > 0 {
		var add, remove []string
		for _, n := range m.Add {
			if !slices.Contains(in, n.ID) && !slices.Contains(add, n.ID) {
				add = append(add, n.ID)
			}
		}
		for _, n := range m.Remove {
			if slices.Contains(in, n.ID) && !slices.Contains(remove, n.ID) {
				remove = append(remove, n.ID)
			}
		}
		checks = append(checks, decentralization(m.SubnetID, in, add, remove, live.Places, o.Minimums[m.SubnetID])...)
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "every add and remove is a no-op, so the whole proposal changes nothing"})
	} else if len(m.Remove) > 0 {
		if c, stalls := progressAfter(m.SubnetID, after, live.Health); stalls {
			checks = append(checks, c)
		}
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
func membershipAfter(m *Membership, current []string) []string {
	var out []string
	for _, n := range m.Add {
		out = append(out, n.ID)
	}
	out = append(out, current...)
	out = slices.DeleteFunc(out, func(id string) bool {
		return slices.ContainsFunc(m.Remove, func(r NodeRef) bool { return r.ID == id })
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

// Closes is each node joining and leaving the subnet.
func (m *Membership) Closes() []Change {
	var out []Change
	for _, a := range m.Add {
		out = append(out, Change{OpAdd, a.ID, m.SubnetID})
	}
	for _, r := range m.Remove {
		out = append(out, Change{OpRemove, r.ID, m.SubnetID})
	}
	return out
}

func membershipChanges(p nns.ChangeSubnetMembershipPayload) []Change {
	var out []Change
	for _, n := range p.NodeIDsAdd {
		out = append(out, Change{OpAdd, n.String(), p.SubnetID.String()})
	}
	for _, n := range p.NodeIDsRemove {
		out = append(out, Change{OpRemove, n.String(), p.SubnetID.String()})
	}
	return out
}

// HCL writes the block as alp plan --generate does.
func (m *Membership) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  membership {\n    subnet_id = %s\n", ref(m.SubnetID))
	for _, a := range m.Add {
		fmt.Fprintf(b, "    add {\n      id = %s\n    }\n", ref(a.ID))
	}
	for _, r := range m.Remove {
		fmt.Fprintf(b, "    remove {\n      id = %s\n    }\n", ref(r.ID))
	}
	b.WriteString("  }\n")
}

// Seed seeds every subnet (a node added may be a member of any), the
// target, and the nodes added, removed and already members.
func seedMembership(ctx context.Context, s Seeder, pl nns.ChangeSubnetMembershipPayload) error {
	if err := s.AllSubnets(ctx); err != nil {
		return err
	}
	if err := s.Records(ctx, nns.SubnetRecordKey(pl.SubnetID.String())); err != nil {
		return err
	}
	nodes := append(slices.Clone(pl.NodeIDsAdd), pl.NodeIDsRemove...)
	rec, ok, err := s.Subnet(pl.SubnetID)
	if err != nil {
		return err
	}
	if ok {
		for _, b := range rec.Membership {
			if id, err := principal.FromBytes(b); err == nil {
				nodes = append(nodes, id)
			}
		}
	}
	return s.Nodes(ctx, nodes)
}

// Generate proposes, per subnet, the change_subnet_membership that makes
// its members the declared ones: first each subnet's removals and the
// additions of nodes that are free, then the additions of nodes that the
// first proposals free from another subnet, each after the removal it
// waits on.
func generateMembership(d *Drift) (out []Generated, notes []string) {
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	live := d.Chain
	if live.SubnetListErr != "" {
		note("membership: the registry's subnet list could not be read (%s), so which subnet holds each node is not known; no membership proposal is generated", live.SubnetListErr)
		return nil, notes
	}
	memberOf := d.memberOf()
	first, second := map[string]*subnetMoves{}, map[string]*subnetMoves{}
	at := func(m map[string]*subnetMoves, subnet string) *subnetMoves {
		if m[subnet] == nil {
			m[subnet] = &subnetMoves{}
		}
		return m[subnet]
	}
	for _, n := range d.Fleet.Nodes {
		facts, read := live.Nodes[n.ID]
		cur := memberOf[n.ID]
		node := d.n.node(n.ID)
		switch {
		case !read || facts.Err != "":
			continue // unknown: reconcile says so
		case n.Decommissioned:
			if cur != "" && facts.Found {
				at(first, cur).moveOut(d, node, cur, "leaves the subnet: it is declared decommissioned, and the registry removes no subnet member")
			}
			continue
		case !facts.Found:
			if n.Subnet != "" {
				note("node %s is declared in subnet %s but is not registered: a node registers itself when it is onboarded, which is no proposal", n.Name, d.n.subnet(n.Subnet).word())
			}
			continue
		case cur == n.Subnet:
			continue
		}
		if cur != "" {
			why := "leaves the subnet: it is declared unassigned"
			if n.Subnet != "" {
				why = fmt.Sprintf("leaves the subnet: it is declared in subnet %s", d.n.subnet(n.Subnet).word())
			}
			at(first, cur).moveOut(d, node, cur, why)
		}
		if n.Subnet == "" {
			continue
		}
		if s := live.Subnets[n.Subnet]; !s.Found {
			if s.Err == "" {
				note("node %s is declared in subnet %s, which the registry does not have: creating a subnet is no proposal alp makes", n.Name, d.n.subnet(n.Subnet).word())
			}
			continue
		}
		if d.Pending[Change{Op: OpAdd, Subject: n.ID, Target: n.Subnet}] {
			continue
		}
		mv := move{node: node, why: "joins the subnet: it is declared in it and is unassigned"}
		target := at(first, n.Subnet)
		if cur != "" {
			// a node that moves in must first leave the subnet it is in
			mv.why = fmt.Sprintf("joins the subnet: it is declared in it, once it has left subnet %s", d.n.subnet(cur).word())
			mv.after = []Change{{Op: OpRemove, Subject: n.ID, Target: cur}}
			target = at(second, n.Subnet)
		}
		target.add = append(target.add, mv)
	}
	for _, decl := range d.Fleet.Subnets {
		id, s := decl.ID, live.Subnets[decl.ID]
		if !s.Found {
			continue
		}
		for _, m := range s.Members {
			if d.n.nodes[m] == nil {
				note("subnet %s: member %s has no node block; declare it (alp registry subnet prints one) or it stays as it is", d.n.subnet(id).word(), m)
			}
		}
	}
	busy := map[string]bool{}
	for _, phase := range []map[string]*subnetMoves{first, second} {
		for _, subnet := range sortedSubnets(phase, d.n) {
			out = append(out, membershipProposal(d.n.subnet(subnet), phase[subnet]))
			busy[subnet] = true
		}
	}
	gs, ns := generateReplacements(d, busy)
	return append(out, gs...), append(notes, ns...)
}

// move is one node's membership change, why, and what it waits on.
type move struct {
	node  ref
	why   string
	after []Change
}

// subnetMoves is one membership proposal's content.
type subnetMoves struct {
	add, remove []move
}

// moveOut records node's removal from subnet unless it is pending.
func (m *subnetMoves) moveOut(d *Drift, node ref, subnet, why string) {
	if d.Pending[Change{Op: OpRemove, Subject: node.ID, Target: subnet}] || slices.ContainsFunc(m.remove, func(x move) bool { return x.node.ID == node.ID }) {
		return
	}
	m.remove = append(m.remove, move{node: node, why: why})
}

// sortedSubnets orders subnets by block name, undeclared ones by id after.
func sortedSubnets(m map[string]*subnetMoves, n names) []string {
	var ids []string
	for id, mv := range m {
		if len(mv.add)+len(mv.remove) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y string) int {
		a, b := n.subnet(x), n.subnet(y)
		if (a.Name == "") != (b.Name == "") {
			if a.Name != "" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.word()+a.ID, b.word()+b.ID)
	})
	return ids
}

func membershipProposal(subnet ref, m *subnetMoves) Generated {
	byID := func(a, b move) int { return strings.Compare(a.node.ID, b.node.ID) }
	slices.SortFunc(m.add, byID)
	slices.SortFunc(m.remove, byID)
	body := &Membership{SubnetID: subnet.ID}
	p := Generated{Body: body}
	for _, a := range m.add {
		body.Add = append(body.Add, NodeRef{ID: a.node.ID})
		p.After = append(p.After, a.after...)
	}
	for _, r := range m.remove {
		body.Remove = append(body.Remove, NodeRef{ID: r.node.ID})
	}
	added, removed := moved(m.add), moved(m.remove)
	switch {
	case len(m.remove) == 0:
		p.Name = fmt.Sprintf("add-%s-to-%s", countOr(added, "nodes"), slug(subnet.word()))
		p.Title = fmt.Sprintf("Add nodes to subnet %s: %s", Short(subnet.ID), titleList(added))
	case len(m.add) == 0:
		p.Name = fmt.Sprintf("remove-%s-from-%s", countOr(removed, "nodes"), slug(subnet.word()))
		p.Title = fmt.Sprintf("Remove nodes from subnet %s: %s", Short(subnet.ID), titleList(removed))
	default:
		p.Name = fmt.Sprintf("replace-nodes-in-%s", slug(subnet.word()))
		p.Title = fmt.Sprintf("Replace nodes in subnet %s: add nodes %s; remove nodes %s", Short(subnet.ID), titleList(added), titleList(removed))
	}
	var b strings.Builder
	verb := "Replace nodes in"
	switch {
	case len(m.remove) == 0:
		verb = "Add nodes to"
	case len(m.add) == 0:
		verb = "Remove nodes from"
	}
	fmt.Fprintf(&b, "# %s subnet %s.\n\n", verb, subnet.ID)
	if len(added) > 0 {
		fmt.Fprintf(&b, "- Add nodes %s\n", fullList(added))
	}
	if len(removed) > 0 {
		fmt.Fprintf(&b, "- Remove nodes %s\n", fullList(removed))
	}
	b.WriteString("\nMotivation:\n")
	for _, mv := range slices.Concat(m.add, m.remove) {
		fmt.Fprintf(&b, "- %s %s.\n", mv.node.ID, mv.why)
	}
	p.Summary = b.String()
	return p
}

func moved(ms []move) []ref {
	out := make([]ref, len(ms))
	for i, m := range ms {
		out[i] = m.node
	}
	return out
}
