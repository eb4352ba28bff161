// Package reconcile diffs the declared fleet (resources.hcl) against live
// state, the way `alp reconcile` reports it: per declared subnet its
// membership and record facts, then node operators, the nodes of each
// operator, chip ids, and the GuestOS version each node runs.
//
// Reconcile is a pure function over already-fetched data (Live, gathered by
// Fetcher), so every row status is tested with tables and the report is
// the same for the same inputs. A fact that could not be read is reported
// as unknown and never counts as drift: the CI gate fails on what is known
// to differ, not on a flaky network.
package reconcile

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"alpnib.dev/alpage/config"
	"alpnib.dev/ic/nns"
)

// Row is one line of the report: `<status>  <name or ->  <id>[  detail]`.
type Row struct {
	Status Status `json:"status"`
	Name   string `json:"name"`
	ID     string `json:"id"`
	Detail string `json:"detail,omitempty"`
	Drift  bool   `json:"drift"`
	// Unread names the source an unknown or unreachable row could not
	// read; empty on every other row.
	Unread ReadSource `json:"unread,omitempty"`
	// Declared and Live are the two sides of a version row, and Subnet
	// the block name of the node's declared subnet (what RenderBrief
	// rolls repeated version drift up by).
	Declared string `json:"declared,omitempty"`
	Live     string `json:"live,omitempty"`
	Subnet   string `json:"subnet,omitempty"`
}

// ReadSource is where a fact is read from, named in unknown rows and the
// summary.
type ReadSource string

// The sources. The registry and governance are the NNS itself: when one of
// their reads fails the report cannot vouch for anything, so the gate did
// not run. The others are third parties whose silence is unknown, not
// drift.
const (
	ReadRegistry   ReadSource = "registry"
	ReadGovernance ReadSource = "governance"
	ReadExplorer   ReadSource = "registry explorer"
	ReadKDS        ReadSource = "AMD KDS"
	ReadNode       ReadSource = "node status or dashboard"
)

// ThirdParty reports whether s is a source outside the NNS.
func (s ReadSource) ThirdParty() bool { return s != ReadRegistry && s != ReadGovernance }

// Section kinds, in report order.
const (
	SectionSubnet      = "subnet"
	SectionDataCenters = "data_centers"
	SectionOperators   = "node_operators"
	SectionNodes       = "nodes"
	SectionChips       = "chips"
	SectionVersions    = "versions"
	SectionHostOS      = "hostos_versions"
)

// Section is a titled group of rows.
type Section struct {
	Kind     string   `json:"kind"`
	Title    string   `json:"title"`
	Rows     []Row    `json:"rows"`
	Warnings []string `json:"warnings,omitempty"`
}

// Report is the whole reconcile result.
type Report struct {
	RegistryVersion uint64    `json:"registry_version"`
	Sections        []Section `json:"sections"`
	// Drift counts drift rows; Unknown counts rows that could not be told.
	Drift   int `json:"drift"`
	Unknown int `json:"unknown"`
	// UnknownFrom counts the unknowns per source that could not be read
	// (rows, and the explorer's lists of operator nodes).
	UnknownFrom map[ReadSource]int `json:"unknown_from,omitempty"`
	// QueriesUnverified is set when the query answers this report rests on
	// were not checked against the subnet's node keys (--no-verify-queries).
	QueriesUnverified bool `json:"queries_unverified,omitempty"`
	// FailedReads lists the registry and governance reads that failed.
	// Any at all means the gate did not run: what the NNS says could not
	// be compared, so neither "in sync" nor "drift" holds.
	FailedReads []string `json:"failed_reads,omitempty"`
}

// InSync reports whether nothing drifted.
func (r *Report) InSync() bool { return r.Drift == 0 }

// Ran reports whether every registry and governance read succeeded, so
// the report is a verdict the CI gate can act on.
func (r *Report) Ran() bool { return len(r.FailedReads) == 0 }

// Reconcile compares res with live.
func Reconcile(res *config.Resources, live *Live) Report {
	n := newNames(res)
	r := Report{RegistryVersion: live.RegistryVersion}
	for _, s := range res.Subnets {
		r.Sections = append(r.Sections, subnetSection(res, s, live, n))
	}
	for _, id := range blocklessSubnets(res, live) {
		r.Sections = append(r.Sections, undeclaredSubnetSection(res, id, live, n))
	}
	if len(res.DataCenters) > 0 {
		r.Sections = append(r.Sections, dataCentersSection(res, live))
	}
	if len(res.NodeProviders) > 0 {
		r.Sections = append(r.Sections, operatorsSection(res, live, n))
	}
	r.Sections = append(r.Sections, nodeSections(res, live, n)...)
	r.Sections = append(r.Sections, chipsSection(res, live))
	r.Sections = append(r.Sections, versionsSection(res, live, n))
	if len(res.HostOSVersions) > 0 || slices.ContainsFunc(res.Nodes, func(n *config.Node) bool { return n.HostOS != "" }) {
		r.Sections = append(r.Sections, hostOSSection(res, live))
	}
	for i := range r.Sections {
		for j := range r.Sections[i].Rows {
			row := &r.Sections[i].Rows[j]
			row.Drift = row.Status.Drift()
			if row.Name == "" {
				row.Name = "-"
			}
			if row.Drift {
				r.Drift++
			}
			if row.Status == Unknown || row.Status == Unreachable {
				r.countUnknown(row.Unread)
			}
		}
	}
	for _, o := range res.NodeOperators {
		if f, read := live.OperatorNodes[o.ID]; read && f.Err != "" && !o.Decommissioned {
			r.countUnknown(f.read())
		}
	}
	r.FailedReads = failedReads(live)
	return r
}

func (r *Report) countUnknown(from ReadSource) {
	r.Unknown++
	if from == "" {
		return
	}
	if r.UnknownFrom == nil {
		r.UnknownFrom = map[ReadSource]int{}
	}
	r.UnknownFrom[from]++
}

// failedReads lists every registry and governance read of live that
// failed, once each, sorted.
func failedReads(live *Live) []string {
	var out []string
	add := func(from ReadSource, what, id, err string) {
		if err != "" {
			out = append(out, fmt.Sprintf("%s: %s %s: %s", from, what, id, err))
		}
	}
	add(ReadRegistry, "subnet list", nns.SubnetListKey, live.SubnetListErr)
	for id, f := range live.Subnets {
		add(ReadRegistry, "subnet record", id, f.Err)
	}
	for id, f := range live.DataCenters {
		add(ReadRegistry, "data center record", id, f.Err)
	}
	for id, f := range live.Providers {
		add(f.errFrom(), "node provider", id, f.Err)
	}
	for id, f := range live.Operators {
		add(ReadRegistry, "node operator record", id, f.Err)
	}
	for id, f := range live.Nodes {
		add(ReadRegistry, "node record", id, f.Err)
	}
	slices.Sort(out)
	return out
}

// names maps ids to block names, per kind.
type names struct{ config.Names }

func newNames(res *config.Resources) names { return names{config.NamesOf(res)} }

// version names a version by its block name when one declares it.
// subnetOf is the block name of node's declared subnet, else its id, else
// "" for a node declared unassigned.
func (n names) subnetOf(node *config.Node) string {
	if name, ok := n.Subnets[node.Subnet]; ok {
		return name
	}
	return node.Subnet
}

func (n names) version(id string) string {
	if name, ok := n.Versions[id]; ok {
		return name
	}
	return id
}

func sortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int { return strings.Compare(a.ID, b.ID) })
}

// subnetSection is a declared subnet's membership, then its record facts.
func subnetSection(res *config.Resources, s *config.Subnet, live *Live, n names) Section {
	sec := Section{Kind: SectionSubnet, Title: fmt.Sprintf("subnet %s (%s)", s.Name, s.ID)}
	facts, read := live.Subnets[s.ID]
	switch {
	case !read || facts.Err != "":
		sec.Rows = []Row{{Status: Unknown, Name: s.Name, ID: s.ID, Detail: "subnet record unread: " + orText(facts.Err, "not fetched"), Unread: ReadRegistry}}
		return sec
	case !facts.Found:
		sec.Rows = []Row{{Status: Gone, Name: s.Name, ID: s.ID, Detail: "no subnet record in the registry"}}
		return sec
	}
	rows := memberRows(res, s.ID, facts, live, n, true)
	sortRows(rows)
	sec.Rows = append(rows, subnetFacts(s, facts)...)
	return sec
}

// memberDeclaredElsewhere says what the block of a node that is a member
// of a subnet declares instead.
// declaredAs says where a node's block puts it: "declared in subnet X",
// "declared unassigned", "declared decommissioned".
func (n names) declaredAs(node *config.Node) string {
	switch {
	case node.Decommissioned:
		return "declared decommissioned"
	case node.Subnet == "":
		return "declared unassigned"
	}
	return "declared in subnet " + n.subnetName(node.Subnet)
}

// subnetName is a subnet's block name, else its id.
func (n names) subnetName(id string) string {
	if name, ok := n.Subnets[id]; ok && name != "" {
		return name
	}
	return id
}

// memberOf maps every member of every subnet record read to its subnet.
func memberOf(live *Live) map[string]string {
	out := map[string]string{}
	for id, s := range live.Subnets {
		for _, m := range s.Members {
			out[m] = id
		}
	}
	return out
}

// memberRows is a row for every node block that declares itself a member
// of subnet id (in-sync, missing, deregistered when its own record is
// gone, or wrong-subnet when it is a member of another subnet, naming
// both), then a row for every member no block declares there: wrong-subnet
// for one whose block declares it unassigned or decommissioned (one whose
// block names another subnet has its row there), and unmanaged, only for a
// member without any block, when withoutBlock is set (a subnet a block
// declares, all of whose members are its to declare).
func memberRows(res *config.Resources, id string, facts SubnetFacts, live *Live, n names, withoutBlock bool) []Row {
	members := map[string]bool{}
	for _, m := range facts.Members {
		members[m] = true
	}
	var rows []Row
	declared := map[string]bool{}
	where := memberOf(live)
	for _, node := range res.Nodes {
		if node.Subnet != id || node.Decommissioned {
			continue
		}
		declared[node.ID] = true
		row := Row{Status: InSync, Name: node.Name, ID: node.ID}
		if !members[node.ID] {
			nf, ok := live.Nodes[node.ID]
			switch other := where[node.ID]; {
			case ok && nf.Err == "" && !nf.Found:
				row.Status, row.Detail = Deregistered, "declared a member; its node record is gone"
			case other != "" && other != id:
				// One row for the node, here where its block puts it,
				// naming both subnets.
				row.Status, row.Detail = WrongSubnet, fmt.Sprintf("declared in subnet %s, a member of subnet %s", n.subnetName(id), n.subnetName(other))
			default:
				row.Status, row.Detail = Missing, "declared a member, not one on-chain"
			}
		}
		rows = append(rows, row)
	}
	for _, m := range facts.Members {
		switch node := n.Node[m]; {
		case declared[m]:
		case node != nil && !node.Decommissioned && node.Subnet != "" && node.Subnet != id:
			// Its own row is in the section of the subnet its block names.
			if _, read := live.Subnets[node.Subnet]; !read {
				rows = append(rows, Row{Status: WrongSubnet, Name: node.Name, ID: m, Detail: fmt.Sprintf("%s, a member of subnet %s", n.declaredAs(node), n.subnetName(id))})
			}
		case node != nil:
			rows = append(rows, Row{Status: WrongSubnet, Name: node.Name, ID: m, Detail: fmt.Sprintf("%s, a member of subnet %s", n.declaredAs(node), n.subnetName(id))})
		case withoutBlock:
			rows = append(rows, Row{Status: Unmanaged, ID: m, Detail: "a member without a node block"})
		}
	}
	return rows
}

// undeclaredSubnets lists, sorted, the subnets that node blocks name as
// theirs (node.subnet) but no subnet block declares. Their membership is
// still a declared fact, so reconcile reads those subnet records too.
func undeclaredSubnets(res *config.Resources) []string {
	blocks := map[string]bool{}
	for _, s := range res.Subnets {
		blocks[s.ID] = true
	}
	var out []string
	for _, node := range res.Nodes {
		if node.Subnet == "" || node.Decommissioned || blocks[node.Subnet] || slices.Contains(out, node.Subnet) {
			continue
		}
		out = append(out, node.Subnet)
	}
	slices.Sort(out)
	return out
}

// blocklessSubnets lists, sorted, every subnet without a subnet block that
// a node block concerns: one a node names (undeclaredSubnets), and one the
// registry lists a declared node in (Live.Subnets holds every subnet when
// the subnet list was read).
func blocklessSubnets(res *config.Resources, live *Live) []string {
	out := undeclaredSubnets(res)
	blocks, nodes := map[string]bool{}, map[string]bool{}
	for _, s := range res.Subnets {
		blocks[s.ID] = true
	}
	for _, node := range res.Nodes {
		nodes[node.ID] = true
	}
	for id, f := range live.Subnets {
		if blocks[id] || slices.Contains(out, id) {
			continue
		}
		if slices.ContainsFunc(f.Members, func(m string) bool { return nodes[m] }) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// undeclaredSubnetSection checks the node blocks that concern subnet id,
// which no subnet block declares: one naming it is in-sync or missing, and
// a member whose block declares it unassigned, elsewhere or decommissioned
// is unmanaged, as in a declared subnet. Only those nodes: the subnet's
// other members and its record facts are nobody's declaration, so they are
// neither unmanaged nor drift.
func undeclaredSubnetSection(res *config.Resources, id string, live *Live, n names) Section {
	sec := Section{Kind: SectionSubnet, Title: fmt.Sprintf("subnet %s (no subnet block; checked for the node blocks it concerns)", id)}
	facts, read := live.Subnets[id]
	var rows []Row
	switch {
	case !read || facts.Err != "":
		for _, node := range res.Nodes {
			if node.Subnet == id && !node.Decommissioned {
				rows = append(rows, Row{Status: Unknown, Name: node.Name, ID: node.ID, Detail: "subnet record unread: " + orText(facts.Err, "not fetched"), Unread: ReadRegistry})
			}
		}
	default:
		if !facts.Found {
			sec.Warnings = append(sec.Warnings, "the registry has no record of subnet "+id)
		}
		rows = memberRows(res, id, facts, live, n, false)
	}
	sortRows(rows)
	sec.Rows = rows
	return sec
}

// subnetFacts compares the record facts; an omitted field asserts its
// default.
func subnetFacts(s *config.Subnet, live SubnetFacts) []Row {
	fact := func(name, declared, got string) Row {
		if declared == got {
			return Row{Status: InSync, Name: name, ID: s.ID, Detail: got}
		}
		return Row{Status: Mismatch, Name: name, ID: s.ID, Detail: declaredLive(declared, orText(got, "unspecified"))}
	}
	sev := s.SevEnabled != nil && *s.SevEnabled
	rows := []Row{
		fact("type", s.EffectiveType(), live.Type),
		fact("cost_schedule", s.EffectiveCostSchedule(), effectiveLiveSchedule(live)),
		fact("sev_enabled", fmt.Sprint(sev), fmt.Sprint(live.SevEnabled)),
	}
	declared, onChain := map[string]bool{}, map[string]bool{}
	for _, a := range s.Admins {
		declared[a] = true
	}
	for _, a := range live.Admins {
		onChain[a] = true
	}
	var diffs []Row
	for a := range declared {
		if !onChain[a] {
			diffs = append(diffs, Row{Status: Mismatch, Name: "admins", ID: s.ID, Detail: "+ " + a + " (declared, not on-chain)"})
		}
	}
	for a := range onChain {
		if !declared[a] {
			diffs = append(diffs, Row{Status: Mismatch, Name: "admins", ID: s.ID, Detail: "- " + a + " (on-chain, not declared)"})
		}
	}
	slices.SortFunc(diffs, func(a, b Row) int { return strings.Compare(a.Detail[2:], b.Detail[2:]) })
	if len(diffs) == 0 {
		return append(rows, Row{Status: InSync, Name: "admins", ID: s.ID, Detail: fmt.Sprintf("%d declared", len(declared))})
	}
	return append(rows, diffs...)
}

// effectiveLiveSchedule reads an unspecified cost schedule as the
// registry's default for the subnet type (free for a cloud engine).
func effectiveLiveSchedule(live SubnetFacts) string {
	if live.CostSchedule != "" {
		return live.CostSchedule
	}
	if live.Type == config.SubnetCloudEngine {
		return "free"
	}
	return "normal"
}

// dataCentersSection compares each declared data center with its registry
// record: that it exists, and its region when one is declared.
func dataCentersSection(res *config.Resources, live *Live) Section {
	sec := Section{Kind: SectionDataCenters, Title: "data centers"}
	for _, dc := range res.DataCenters {
		row := Row{Name: dc.Name, ID: dc.ID}
		f, read := live.DataCenters[dc.ID]
		switch {
		case !read || f.Err != "":
			row.Status, row.Detail, row.Unread = Unknown, "data center record unread: "+orText(f.Err, "not fetched"), ReadRegistry
		case !f.Found:
			row.Status, row.Detail = Gone, "no data center record in the registry"
		case dc.Region == "":
			row.Status, row.Detail = OK, "region "+f.Region+" (none declared)"
		case dc.Region != f.Region:
			row.Status, row.Detail = RegionMismatch, declaredLive(dc.Region, orText(f.Region, "unspecified"))
		default:
			row.Status, row.Detail = OK, "region "+f.Region
		}
		sec.Rows = append(sec.Rows, row)
	}
	sortRows(sec.Rows)
	return sec
}

// operatorsSection compares declared providers and operators with the NNS.
func operatorsSection(res *config.Resources, live *Live, n names) Section {
	sec := Section{Kind: SectionOperators, Title: "node providers and operators"}
	var rows []Row
	for _, p := range res.NodeProviders {
		f, read := live.Providers[p.ID]
		row := Row{Name: p.Name, ID: p.ID}
		switch {
		case !read || f.Err != "":
			row.Status, row.Detail, row.Unread = Unknown, "node provider unread: "+orText(f.Err, "not fetched"), f.errFrom()
		case p.Decommissioned && (f.Known || len(f.Operators) > 0):
			row.Status, row.Detail = StillRegistered, "declared decommissioned; governance or the registry still has it"
		case p.Decommissioned:
			row.Status, row.Detail = Decommissioned, "node provider absent, as declared"
		case !f.Known:
			row.Status, row.Detail = ProviderAbsent, "governance does not list this node provider"
		default:
			row.Status, row.Detail = OK, fmt.Sprintf("node provider; %d operator(s) on-chain", len(f.Operators))
		}
		rows = append(rows, row)
	}
	for _, o := range res.NodeOperators {
		rows = append(rows, operatorRow(o, live, n))
	}
	sortRows(rows)
	sec.Rows = rows
	return sec
}

func operatorRow(o *config.NodeOperator, live *Live, n names) Row {
	row := Row{Name: o.Name, ID: o.ID}
	own, ownRead := live.Operators[o.ID]
	if o.Decommissioned {
		why := "declared decommissioned"
		if o.DecommissionedByProvider {
			why = "decommissioned with its node provider"
		}
		switch {
		case !ownRead || own.Err != "":
			row.Status, row.Detail, row.Unread = Unknown, why+"; operator record unread: "+orText(own.Err, "not fetched"), ReadRegistry
		case own.Found:
			row.Status, row.Detail = StillRegistered, why+"; its record is still in the registry"
		default:
			row.Status, row.Detail = Decommissioned, why+"; no record, as expected"
		}
		return row
	}
	if o.Provider == "" {
		row.Status, row.Detail = Unknown, "no provider declared, so no owner to check"
		return row
	}
	pf, read := live.Providers[o.Provider]
	provider := orText(n.Providers[o.Provider], o.Provider)
	switch {
	case !read || pf.Err != "":
		row.Status, row.Detail, row.Unread = Unknown, "node provider unread: "+orText(pf.Err, "not fetched"), pf.errFrom()
	case !pf.Known && len(pf.Operators) == 0:
		row.Status, row.Detail = ProviderAbsent, "its node provider "+provider+" is not on-chain"
	case !ownRead || own.Err != "":
		row.Status, row.Detail, row.Unread = Unknown, "operator record unread: "+orText(own.Err, "not fetched"), ReadRegistry
	case !own.Found:
		row.Status, row.Detail = Gone, "no node operator record in the registry"
	case own.Provider != o.Provider:
		// The operator's own record names its provider: read at the
		// report's version, like every record.
		row.Status, row.Detail = NotOwned, fmt.Sprintf("node provider %s does not own it on-chain; its record names %s", provider, orText(n.Providers[own.Provider], own.Provider))
	case o.DC != "" && own.DC != o.DC:
		row.Status, row.Detail = DCMismatch, fmt.Sprintf("declared=%s live=%s", o.DC, own.DC)
	default:
		row.Status, row.Detail = OK, "dc "+own.DC
	}
	if diffs := configDiffs(o, own); len(diffs) > 0 && (row.Status == OK || row.Status == DCMismatch) {
		if row.Status == OK {
			row.Status, row.Detail = ConfigMismatch, ""
		}
		row.Detail = joinDetail(row.Detail, strings.Join(diffs, "; "))
	}
	return row
}

// configDiffs says which of the operator's declared node_allowance,
// rewardable_nodes and ipv6 its record does not have (an omitted one is not
// checked).
func configDiffs(o *config.NodeOperator, own OperatorFacts) []string {
	var out []string
	if o.NodeAllowance != nil && *o.NodeAllowance != own.NodeAllowance {
		out = append(out, fmt.Sprintf("node_allowance declared=%d live=%d", *o.NodeAllowance, own.NodeAllowance))
	}
	if o.RewardableNodes != nil && countsText(o.RewardableNodes) != countsText(own.RewardableNodes) {
		out = append(out, fmt.Sprintf("rewardable_nodes declared={%s} live={%s}", countsText(o.RewardableNodes), countsText(own.RewardableNodes)))
	}
	if o.IPv6 != nil && (own.IPv6 == nil || *own.IPv6 != *o.IPv6) {
		live := "none"
		if own.IPv6 != nil {
			live = *own.IPv6
		}
		out = append(out, fmt.Sprintf("ipv6 declared=%s live=%s", *o.IPv6, live))
	}
	return out
}

// countsText is a node type map as "type1.1=2, type3.1=4", in key order.
func countsText(m map[string]uint32) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// nodeSections is one section per declared operator (and one for nodes
// whose operator is not declared): each declared node against its own
// record, and the operator's on-chain nodes no block declares.
func nodeSections(res *config.Resources, live *Live, n names) []Section {
	byOperator := map[string][]*config.Node{}
	var order []string
	seen := map[string]bool{}
	add := func(op string) {
		if !seen[op] {
			seen[op] = true
			order = append(order, op)
		}
	}
	for _, o := range res.NodeOperators {
		add(o.ID)
	}
	for _, node := range res.Nodes {
		add(node.Operator)
		byOperator[node.Operator] = append(byOperator[node.Operator], node)
	}
	decommissioned := map[string]bool{}
	for _, o := range res.NodeOperators {
		decommissioned[o.ID] = o.Decommissioned
	}
	var out []Section
	for _, op := range order {
		title := "nodes of operator " + orText(n.Operators[op], op)
		if op == "" {
			title = "nodes without an operator"
		} else if n.Operators[op] != "" {
			title += " (" + op + ")"
		}
		sec := Section{Kind: SectionNodes, Title: title}
		declared := map[string]bool{}
		for _, node := range byOperator[op] {
			declared[node.ID] = true
			sec.Rows = append(sec.Rows, nodeRow(node, live, n))
		}
		if op != "" && !decommissioned[op] {
			owned, read := live.OperatorNodes[op]
			switch {
			case !read:
			case owned.Err != "":
				sec.Warnings = append(sec.Warnings, "nodes the operator owns unread"+owned.label()+": "+owned.Err+"; unmanaged nodes not checked")
			default:
				for _, id := range owned.Nodes {
					if declared[id] {
						continue
					}
					if _, elsewhere := n.Nodes[id]; elsewhere {
						continue // its own block reports operator-mismatch
					}
					sec.Rows = append(sec.Rows, Row{Status: Unmanaged, ID: id, Detail: "owned on-chain, no node block" + owned.label()})
				}
			}
		}
		if len(sec.Rows) == 0 && len(sec.Warnings) == 0 {
			continue
		}
		sortRows(sec.Rows)
		out = append(out, sec)
	}
	return out
}

func nodeRow(node *config.Node, live *Live, n names) Row {
	row := Row{Name: node.Name, ID: node.ID}
	f, read := live.Nodes[node.ID]
	switch {
	case !read || f.Err != "":
		row.Status, row.Detail, row.Unread = Unknown, "node record unread: "+orText(f.Err, "not fetched"), ReadRegistry
	case node.Decommissioned && f.Found:
		row.Status, row.Detail = StillRegistered, "declared decommissioned; its record is still in the registry"
	case node.Decommissioned:
		row.Status, row.Detail = Decommissioned, "no record, as declared"
	case !f.Found:
		row.Status, row.Detail = Gone, "no node record in the registry"
	case node.Operator != "" && f.Operator != node.Operator:
		row.Status, row.Detail = OperatorMismatch, fmt.Sprintf("declared=%s live=%s", orText(n.Operators[node.Operator], node.Operator), orText(n.Operators[f.Operator], f.Operator))
	default:
		row.Status = OK
	}
	return row
}

// chipsSection compares each registered declared node's chip id with its
// record, and says what AMD KDS vouches for.
func chipsSection(res *config.Resources, live *Live) Section {
	sec := Section{Kind: SectionChips, Title: "chip ids"}
	for _, node := range res.Nodes {
		if node.Decommissioned {
			continue
		}
		f, read := live.Nodes[node.ID]
		if read && f.Err == "" && !f.Found {
			continue // gone: the nodes section says so
		}
		sec.Rows = append(sec.Rows, chipRow(node, f, read, live))
	}
	sortRows(sec.Rows)
	return sec
}

func chipRow(node *config.Node, f NodeFacts, read bool, live *Live) Row {
	row := Row{Name: node.Name, ID: node.ID}
	if !read || f.Err != "" {
		row.Status, row.Detail, row.Unread = Unknown, "node record unread: "+orText(f.Err, "not fetched"), ReadRegistry
		return row
	}
	if len(f.Chip) != 0 && len(f.Chip) != config.ChipIDLen {
		row.Status, row.Detail = Malformed, fmt.Sprintf("the record's chip_id is %d bytes, not %d", len(f.Chip), config.ChipIDLen)
		return row
	}
	liveHex := hex.EncodeToString(f.Chip)
	switch {
	case node.Chip == nil && f.Chip == nil:
		row.Status, row.Detail = InSync, "no chip, as declared"
		return row
	case node.Chip == nil:
		row.Status, row.Detail = ChipUndeclared, "on-chain "+short(liveHex)
	case f.Chip == nil:
		row.Status, row.Detail = ChipMissing, "declared "+short(hex.EncodeToString(node.Chip))+", the record has none"
		return row
	case !bytes.Equal(node.Chip, f.Chip):
		row.Status, row.Detail = ChipChanged, fmt.Sprintf("declared=%s live=%s", short(hex.EncodeToString(node.Chip)), short(liveHex))
	default:
		row.Status = InSync
	}
	verdict, kds := kdsWords(live.Chips[liveHex])
	if row.Status == InSync {
		switch kds {
		case kdsRefused:
			row.Status = AMDUnverified
		case kdsSilent:
			// The record agrees, but AMD could not be asked to vouch
			// for the chip: a third party's silence, not drift.
			row.Status, row.Unread = Unknown, ReadKDS
			row.Detail = "the chip matches the record"
		}
	}
	row.Detail = joinDetail(row.Detail, verdict)
	return row
}

// kdsOutcome is what a KDS verdict means for a chip row.
type kdsOutcome int

const (
	kdsVouched kdsOutcome = iota // verified now, or a cached verdict stands (or KDS not asked)
	kdsRefused                   // AMD refused it and no cached verdict stands
	kdsSilent                    // KDS could not be asked and nothing is cached
)

// kdsWords renders what KDS says of a chip.
func kdsWords(c ChipFacts) (string, kdsOutcome) {
	switch {
	case c.Asked != nil && c.Asked.Verified:
		return "AMD KDS: " + c.Asked.Product, kdsVouched
	case c.Asked != nil && c.Asked.Refused:
		return "AMD KDS refuses it: " + orText(c.Asked.Reason, "no product line knows the chip"), kdsRefused
	case c.Cached && c.Asked != nil && c.Asked.Inconclusive:
		return "AMD KDS: " + c.Product + " (cached; asking again was inconclusive: " + c.Asked.Reason + ")", kdsVouched
	case c.Cached:
		return "AMD KDS: " + c.Product + " (cached)", kdsVouched
	case c.Asked != nil && c.Asked.Inconclusive:
		return "AMD KDS inconclusive: " + c.Asked.Reason, kdsSilent
	}
	return "AMD KDS not asked", kdsVouched
}

// versionsSection compares each checked node's effective version with what
// it runs.
func versionsSection(res *config.Resources, live *Live, n names) Section {
	sec := Section{Kind: SectionVersions, Title: "GuestOS versions"}
	if live.ElectedErr != "" {
		sec.Warnings = append(sec.Warnings, "the elected version set is unreadable ("+live.ElectedErr+"); the elected check is skipped")
	}
	for _, node := range res.Nodes {
		if node.Decommissioned || node.Version == "" {
			continue
		}
		f, read := live.Versions[node.ID]
		row := Row{Name: node.Name, ID: node.ID}
		switch {
		case !read || f.Version == "":
			row.Status, row.Detail, row.Unread = Unreachable, "node and dashboard unreadable: "+orText(f.Err, "not fetched"), ReadNode
		case f.Version == node.Version:
			row.Status, row.Detail = OK, n.version(f.Version)
		default:
			row.Status, row.Detail = VersionMismatch, fmt.Sprintf("declared=%s live=%s", n.version(node.Version), n.version(f.Version))
			row.Declared, row.Live, row.Subnet = n.version(node.Version), n.version(f.Version), n.subnetOf(node)
		}
		if read && f.Source == FromDashboard && f.Version != "" {
			row.Detail += " via dashboard" + dashboardStatusText(f.DashboardStatus)
		}
		if read && f.Source == FromNode && f.TLSUnverified {
			row.Detail += " " + UnverifiedNodeLabel
		}
		if live.ElectedErr == "" && !live.Elected[node.Version] {
			row.Detail += " NOT ELECTED"
		}
		if node.VersionOverride {
			row.Detail += " [override]"
		}
		sec.Rows = append(sec.Rows, row)
	}
	sortRows(sec.Rows)
	return sec
}

// hostOSSection compares each declared node's HostOS version with the
// hostos_version_id of its registry record, read certified like every
// record (a node whose record is missing is the nodes section's row).
func hostOSSection(res *config.Resources, live *Live) Section {
	sec := Section{Kind: SectionHostOS, Title: "HostOS versions"}
	if live.HostOSElectedErr != "" {
		sec.Warnings = append(sec.Warnings, "the elected HostOS versions are unreadable ("+live.HostOSElectedErr+"); the elected check is skipped")
	}
	names := map[string]string{}
	for _, v := range res.HostOSVersions {
		names[v.ID] = v.Name
	}
	word := func(id string) string {
		if id == "" {
			return "none"
		}
		return orText(names[id], short(id))
	}
	for _, node := range res.Nodes {
		f, read := live.Nodes[node.ID]
		if node.Decommissioned || node.HostOS == "" || (read && f.Err == "" && !f.Found) {
			continue
		}
		row := Row{Name: node.Name, ID: node.ID}
		switch {
		case !read || f.Err != "":
			row.Status, row.Detail, row.Unread = Unknown, "node record unread: "+orText(f.Err, "not fetched"), ReadRegistry
		case f.HostOS == node.HostOS:
			row.Status, row.Detail = OK, word(f.HostOS)
		default:
			row.Status, row.Detail = HostOSMismatch, fmt.Sprintf("declared=%s live=%s", word(node.HostOS), word(f.HostOS))
			row.Declared, row.Live = word(node.HostOS), word(f.HostOS)
		}
		if live.HostOSElectedErr == "" && !live.HostOSElected[node.HostOS] {
			row.Detail += " NOT ELECTED"
		}
		if node.HostOSOverride {
			row.Detail += " [override]"
		}
		sec.Rows = append(sec.Rows, row)
	}
	sortRows(sec.Rows)
	return sec
}

// dashboardStatusText is the status the dashboard gave a node, as a row
// shows it after "via dashboard": why the dashboard's word is the
// answer. A status alp does not know is quoted: it is a third party's text.
func dashboardStatusText(status string) string {
	switch {
	case status == "":
		return ""
	case statusSays(status) == saysNothing:
		status = strconv.Quote(status)
	}
	return " (status " + status + ")"
}

// short abbreviates a chip id for a row; JSON readers have the node record.
func short(h string) string {
	if len(h) <= 16 {
		return h
	}
	return h[:16] + "…"
}

func orText(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
