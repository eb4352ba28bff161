package kinds

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"alpnib.dev/ic/nns"
)

// DeployHostOS is a "deploy_hostos" proposal's block:
// deploy_hostos_to_some_nodes.
type DeployHostOS struct {
	HostOSVersionID string    `hcl:"hostos_version_id" since:"v0.6.0" doc:"HostOS version to deploy (hostos_version.<name>.id, or the hash itself). Must be elected: the registry refuses a version with no hostos_version_<id> record, and preflight checks it (--force submits anyway)."`
	Nodes           []NodeRef `hcl:"node,block" since:"v0.6.0" doc:"A node to move to the version. Repeat the block for each one; every node must be registered."`
}

// OpHostOS is the change a deploy_hostos makes: node Subject runs HostOS
// version Target.
const OpHostOS Op = "hostos"

// deployHostOS is the kind: deploy_hostos_to_some_nodes.
var deployHostOS = Define(Def[DeployHostOS, nns.DeployHostosToSomeNodesPayload, DeployHostOSFacts]{
	Name: "deploy_hostos", Generates: "for nodes declared to run an elected HostOS version their records do not name, one per version", Since: "v0.6.0",
	Doc:     "Nested in a proposal of kind \"deploy_hostos\": deploy_hostos_to_some_nodes, as ic-admin's deploy-hostos-to-some-nodes makes it. Sets the HostOS version on each node's registry record; holds one node block per node.",
	OnChain: Execute[nns.DeployHostosToSomeNodesPayload](nns.FunctionDeployHostosToSomeNodes),
	Changes: func(p nns.DeployHostosToSomeNodesPayload) []Change {
		v := ""
		if p.HostosVersionID != nil {
			v = *p.HostosVersionID
		}
		var out []Change
		for _, n := range p.NodeIDs {
			out = append(out, Change{Op: OpHostOS, Subject: n.String(), Target: v})
		}
		return out
	},
	Seed: func(ctx context.Context, s Seeder, p nns.DeployHostosToSomeNodesPayload) error {
		// the nodes must be registered, the version elected
		if p.HostosVersionID != nil {
			if err := s.Records(ctx, nns.HostosVersionRecordKey(*p.HostosVersionID)); err != nil {
				return err
			}
		}
		return s.Nodes(ctx, p.NodeIDs)
	},
	Generate: generateDeployHostOS,
	Labels:   func(d *DeployHostOS) []NodeRef { return d.Nodes },
})

// DeployHostOSFacts is what a deploy_hostos preflight reads: the nodes,
// and whether the version is elected (ElectedErr when that could not be
// read).
type DeployHostOSFacts struct {
	Nodes      map[string]NodeFacts
	Elected    bool
	ElectedErr string
}

func (d *DeployHostOS) Validate(c Checker) {
	if d.HostOSVersionID == "" {
		c.Errorf(c.At("", 0, "hostos_version_id"), "Missing HostOS version", "proposal %q: hostos_version_id is empty; write the version hash, or hostos_version.<name>.id", c.Proposal())
	}
	if id, isName := c.HostOSVersionID(d.HostOSVersionID); isName {
		c.Errorf(c.At("", 0, "hostos_version_id"), "HostOS version name, not id", "proposal %q: hostos_version_id %q is the name of a hostos_version block (id %s), and the payload takes the id; write hostos_version_id = hostos_version.%s.id", c.Proposal(), d.HostOSVersionID, id, d.HostOSVersionID)
	}
	if len(d.Nodes) == 0 {
		c.Errorf(c.Header(), "No node to upgrade", "proposal %q: add one node { id = … } block per node to move to the version", c.Proposal())
	}
	for i, n := range d.Nodes {
		c.Principal("node.id", n.ID, c.At("node", i, "id"))
		c.Once("node", "deploy_hostos", n.ID, c.At("node", i, "id"))
	}
}

func (d *DeployHostOS) IDs(visit func(*string)) { refIDs(d.Nodes, visit) }

// Build makes the payload ic-admin makes: the nodes in the block's order
// and the version, always set.
func (d *DeployHostOS) Build(Live) (Payload[nns.DeployHostosToSomeNodesPayload], error) {
	nodes, err := principals("node.id", nodeIDs(d.Nodes))
	if err != nil {
		return Payload[nns.DeployHostosToSomeNodesPayload]{}, err
	}
	v := d.HostOSVersionID
	return Payload[nns.DeployHostosToSomeNodesPayload]{
		Value: nns.DeployHostosToSomeNodesPayload{NodeIDs: nodes, HostosVersionID: &v},
		Render: func(w io.Writer) {
			fmt.Fprintf(w, "  hostos:   %s\n", v)
			writeList(w, "node", nodes)
		},
	}, nil
}

// Fetch reads the nodes' records and the version's.
func (d *DeployHostOS) Fetch(ctx context.Context, r Reader) (f DeployHostOSFacts, err error) {
	if f.Nodes, err = r.Nodes(ctx, nodeIDs(d.Nodes)); err != nil {
		return f, err
	}
	if _, f.Elected, err = r.Record(ctx, nns.HostosVersionRecordKey(d.HostOSVersionID)); err != nil {
		f.ElectedErr, err = err.Error(), nil
	}
	return f, nil
}

// Check refuses an unregistered node (the registry traps on it) and an
// unelected version (no hostos_version_<id> record: the registry's HostOS
// invariant fails), and notes the nodes already on the version.
func (d *DeployHostOS) Check(f DeployHostOSFacts, o Options) ([]Check, bool) {
	v := d.HostOSVersionID
	var checks []Check
	switch {
	case f.ElectedErr != "":
		sev, then := Warning, "check it is elected before the proposal is voted on"
		if o.ForApply && !o.Force {
			sev, then = Refused, "apply needs the answer; retry, or pass --force to submit without it"
		}
		checks = append(checks, Check{Severity: sev, Subject: v, Message: fmt.Sprintf("could not tell whether HostOS version %s is elected (%s); %s", v, f.ElectedErr, then)})
	case !f.Elected:
		sev, then := Refused, "the registry refuses to deploy it (\"Could not find HostOS version\"); elect it first (or --force to submit anyway)"
		if o.Force {
			sev, then = Warning, "submitting anyway (--force); the registry will likely refuse it"
		}
		checks = append(checks, Check{Severity: sev, Subject: v, Message: fmt.Sprintf("HostOS version %s is not elected (no hostos_version_%s record); %s", v, v, then)})
	default:
		checks = append(checks, Check{Severity: OK, Subject: v, Message: fmt.Sprintf("HostOS version %s is elected", v)})
	}
	changes := 0
	for _, n := range d.Nodes {
		nf := f.Nodes[n.ID]
		switch {
		case nf.Err != "":
			changes++
			checks = append(checks, Check{Severity: Warning, Subject: n.ID, Message: fmt.Sprintf("could not read node %s from the registry (%s); check it is registered", n.ID, nf.Err)})
		case !nf.Registered:
			changes++
			checks = append(checks, Check{Severity: Refused, Subject: n.ID, Message: fmt.Sprintf("node %s is not registered; the registry refuses the whole proposal (\"node record for %s not found in the registry\"), so drop it from the block", n.ID, n.ID)})
		case nf.HostOS == v:
			checks = append(checks, Check{Severity: Note, Subject: n.ID, Message: fmt.Sprintf("node %s runs HostOS %s already", n.ID, v)})
		default:
			changes++
			checks = append(checks, Check{Severity: OK, Subject: n.ID, Message: fmt.Sprintf("node %s moves from HostOS %s to %s", n.ID, orNone(nf.HostOS), v)})
		}
	}
	if changes == 0 {
		checks = append(checks, Check{Severity: Note, Message: "every node named runs the version already, so the whole proposal changes nothing"})
	}
	return checks, changes == 0
}

// Closes is each node running the version.
func (d *DeployHostOS) Closes() []Change {
	var out []Change
	for _, n := range d.Nodes {
		out = append(out, Change{Op: OpHostOS, Subject: n.ID, Target: d.HostOSVersionID})
	}
	return out
}

// HCL writes the block as alp plan --generate does.
func (d *DeployHostOS) HCL(b *strings.Builder, ref func(id string) string) {
	fmt.Fprintf(b, "  deploy_hostos {\n    hostos_version_id = %s\n", ref(d.HostOSVersionID))
	for _, n := range d.Nodes {
		fmt.Fprintf(b, "    node {\n      id = %s\n    }\n", ref(n.ID))
	}
	b.WriteString("  }\n")
}

// generateDeployHostOS proposes, per declared HostOS version, one
// deploy_hostos for the registered nodes declared to run it whose records
// name another; a version the NNS has not elected is a note.
func generateDeployHostOS(d *Drift) (out []Generated, notes []string) {
	byVersion := map[string][]ref{}
	var versions []string
	for _, n := range d.Fleet.Nodes {
		f, read := d.Chain.Nodes[n.ID]
		if n.Decommissioned || n.HostOS == "" || !read || f.Err != "" || !f.Found || f.HostOS == n.HostOS ||
			d.Pending[Change{Op: OpHostOS, Subject: n.ID, Target: n.HostOS}] {
			continue
		}
		if _, seen := byVersion[n.HostOS]; !seen {
			versions = append(versions, n.HostOS)
		}
		byVersion[n.HostOS] = append(byVersion[n.HostOS], d.n.node(n.ID))
	}
	slices.Sort(versions)
	for _, v := range versions {
		nodes := byVersion[v]
		elected, known := d.Chain.HostOSElected[v]
		switch {
		case !known || (!elected && d.Chain.HostOSElectedErr != ""):
			notes = append(notes, fmt.Sprintf("HostOS version %s: whether it is elected could not be read (%s); no deploy_hostos is generated for its %d node(s)", d.n.hostOS(v).word(), d.Chain.HostOSElectedErr, len(nodes)))
			continue
		case !elected:
			notes = append(notes, fmt.Sprintf("HostOS version %s: %d node(s) are declared to run it, but the NNS has not elected it; electing a version is no proposal alp makes", d.n.hostOS(v).word(), len(nodes)))
			continue
		}
		slices.SortFunc(nodes, func(a, b ref) int { return strings.Compare(a.ID, b.ID) })
		body := &DeployHostOS{HostOSVersionID: v}
		for _, n := range nodes {
			body.Nodes = append(body.Nodes, NodeRef{ID: n.ID})
		}
		p := Generated{Body: body, Name: fmt.Sprintf("deploy-hostos-%s-to-%s", slug(d.n.hostOS(v).word()), countOr(nodes, "nodes"))}
		p.Title = fmt.Sprintf("Set HostOS version: %s on %d nodes", abbrev(v), len(nodes))
		p.Summary = fmt.Sprintf("Deploy HostOS version %s to nodes %s.\n\nMotivation: the nodes are declared to run this HostOS version, and their registry records name another.\n", v, fullList(nodes))
		out = append(out, p)
	}
	return out, notes
}
