package kinds

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// From drift: what a kind's Generate reads, and the words its proposals
// are written in. alpage/generate fills a Drift from the declared fleet
// (alpage/config) and what reconcile read of the live registry
// (alpage/reconcile.Live), neither of which this package may import; it
// calls every kind in All, orders what they propose by what each waits on
// (Generated.After), and writes it.

// Drift is the declared fleet, the live registry as reconcile read it, and
// the changes proposals already under way will make.
type Drift struct {
	Fleet Fleet
	Chain Chain
	// Pending are the changes of declared proposals not yet executed,
	// rejected or failed, and of open proposals governance shows: a kind
	// does not propose them again (alpage/generate also drops a generated
	// proposal all of whose changes are pending).
	Pending map[Change]bool

	n names
}

// Fleet is the declared resources, in file order.
type Fleet struct {
	Subnets     []FleetSubnet
	DataCenters []FleetDataCenter
	Providers   []FleetProvider
	Operators   []FleetOperator
	Versions    []FleetVersion
	// HostOSVersions are the hostos_version blocks.
	HostOSVersions []FleetVersion
	Nodes          []FleetNode
}

// FleetSubnet is a subnet block; Type is "" when omitted (application).
type FleetSubnet struct {
	ID, Name, Type, CostSchedule string
	SevEnabled                   bool
	Admins                       []string
	// MinNakamoto is the declared min_nakamoto_coefficients.
	MinNakamoto map[string]int
}

// FleetDataCenter is a data_center block.
type FleetDataCenter struct{ ID, Name, Region string }

// FleetProvider is a node_provider block.
type FleetProvider struct {
	ID, Name, Label string
	Decommissioned  bool
}

// FleetOperator is a node_operator block (Decommissioned also when its
// provider is). Provider and DC are "" when omitted; NodeAllowance,
// RewardableNodes, MaxRewardableNodes and IPv6 are nil when omitted (not
// declared, so not checked).
type FleetOperator struct {
	ID, Name           string
	Decommissioned     bool
	Provider, DC       string
	NodeAllowance      *uint64
	RewardableNodes    map[string]uint32
	MaxRewardableNodes map[string]uint32
	IPv6               *string
}

// FleetVersion is a guestos_version block.
type FleetVersion struct{ ID, Name, Label string }

// FleetNode is a node block; Version is the effective GuestOS version ("":
// unchecked), HostOS the effective HostOS version ("": unchecked), Chip
// the decoded chip id (nil when omitted).
type FleetNode struct {
	ID, Name, Subnet, Operator, Version string
	HostOS                              string
	Decommissioned                      bool
	Chip                                []byte
	// Replace marks a member for replacement (replace = true).
	Replace bool
}

// Chain is what reconcile read of the live registry and governance. A map
// holds an entry for each id that was read; Err says the read failed.
type Chain struct {
	Subnets map[string]ChainSubnet
	// SubnetListErr is set when the registry's subnet list could not be read.
	SubnetListErr string
	DataCenters   map[string]ChainDataCenter
	Providers     map[string]ChainProvider
	Operators     map[string]ChainOperator
	Nodes         map[string]ChainNode
	// Versions is the version each version-checked node reports running
	// ("" when not known).
	Versions map[string]string
	// Elected says, per declared version id, whether the NNS elected it;
	// ElectedErr is set when that could not be read.
	Elected    map[string]bool
	ElectedErr string
	// HostOSElected says, per declared HostOS version id, whether its
	// hostos_version_<id> record exists; HostOSElectedErr is set when that
	// could not be read.
	HostOSElected    map[string]bool
	HostOSElectedErr string
	// Topology is each declared node's and subnet member's health and
	// place at the registry version read; nil when not read, and then no
	// replacement of an unhealthy member is generated.
	Topology *Topology
}

// ChainSubnet is a subnet record: Type and CostSchedule in the schema's
// words (CostSchedule "" when unspecified), ReplicaVersion the version it
// deploys.
type ChainSubnet struct {
	Found                              bool
	Err                                string
	Members                            []string
	Type, CostSchedule, ReplicaVersion string
	SevEnabled                         bool
	Admins                             []string
}

// ChainDataCenter is a data center record.
type ChainDataCenter struct {
	Found  bool
	Region string
}

// ChainProvider is a node provider: whether governance lists it, and the
// operators the registry has under it, sorted.
type ChainProvider struct {
	Known     bool
	Err       string
	Operators []string
}

// ChainOperator is an operator's own record and the nodes it owns:
// NodesListed is false when those were not read, NodesErr set when the
// read failed.
type ChainOperator struct {
	Found       bool
	Err         string
	NodesListed bool
	Nodes       []string
	NodesErr    string
	// The record's fields, when Found: its provider, dc_id, allowance,
	// rewardable nodes and ipv6 (nil when unset).
	Provider, DC    string
	NodeAllowance   uint64
	RewardableNodes map[string]uint32
	IPv6            *string
}

// ChainNode is a node record; HostOS is its hostos_version_id ("" when
// unset).
type ChainNode struct {
	Found    bool
	Err      string
	Operator string
	Chip     []byte
	HostOS   string
}

// NewDrift is the Drift of fleet, chain and the pending changes, indexed.
func NewDrift(fleet Fleet, chain Chain, pending []Change) *Drift {
	d := &Drift{Fleet: fleet, Chain: chain, Pending: map[Change]bool{}}
	for _, c := range pending {
		d.Pending[c] = true
	}
	d.n = names{subnets: map[string]string{}, nodes: map[string]*FleetNode{}, operators: map[string]string{},
		providers: map[string]string{}, versions: map[string]string{}, hostos: map[string]string{}}
	for _, s := range fleet.Subnets {
		d.n.subnets[s.ID] = s.Name
	}
	for i := range fleet.Nodes {
		d.n.nodes[fleet.Nodes[i].ID] = &d.Fleet.Nodes[i]
	}
	for _, o := range fleet.Operators {
		d.n.operators[o.ID] = o.Name
	}
	for _, p := range fleet.Providers {
		d.n.providers[p.ID] = p.Name
	}
	for _, v := range fleet.Versions {
		d.n.versions[v.ID] = v.Name
	}
	for _, v := range fleet.HostOSVersions {
		d.n.hostos[v.ID] = v.Name
	}
	return d
}

// Generated is one proposal a kind generates from drift.
type Generated struct {
	// Name says what it does; alpage/generate suffixes it when taken.
	Name, Title, Summary string
	// Body is the proposal's block, of the generating kind's type.
	Body Body
	// After is the changes that must have executed first: alpage/generate
	// orders the proposal after those that make them (a change no
	// generated proposal makes is already so, or under way).
	After []Change
}

// memberOf is each live subnet member's subnet.
func (d *Drift) memberOf() map[string]string {
	out := map[string]string{}
	for id, s := range d.Chain.Subnets {
		for _, m := range s.Members {
			out[m] = id
		}
	}
	return out
}

// Ref is id as a generated block writes it: a reference to the block that
// declares it (as whatever it is), else the id quoted.
func (d *Drift) Ref(id string) string {
	for _, r := range []ref{d.n.subnet(id), d.n.node(id), d.n.operator(id), d.n.provider(id), d.n.version(id), d.n.hostOS(id)} {
		if r.Name != "" {
			return r.Kind + "." + r.Name + ".id"
		}
	}
	return Quote(id)
}

// names maps ids to their block names, for references and wording.
type names struct {
	subnets, operators, providers, versions, hostos map[string]string
	nodes                                           map[string]*FleetNode
}

// ref is an id and the block that declares it.
type ref struct {
	ID   string
	Kind string // subnet, node, node_operator, node_provider, guestos_version, hostos_version
	Name string // the block name, "" when undeclared
}

// word is how titles and summaries name it: the block name, else the
// id's first five characters, the way the NNS dashboard abbreviates.
func (r ref) word() string {
	if r.Name != "" {
		return r.Name
	}
	return Short(r.ID)
}

func (n names) subnet(id string) ref { return ref{ID: id, Kind: "subnet", Name: n.subnets[id]} }
func (n names) node(id string) ref {
	r := ref{ID: id, Kind: "node"}
	if b := n.nodes[id]; b != nil {
		r.Name = b.Name
	}
	return r
}
func (n names) operator(id string) ref {
	return ref{ID: id, Kind: "node_operator", Name: n.operators[id]}
}
func (n names) provider(id string) ref {
	return ref{ID: id, Kind: "node_provider", Name: n.providers[id]}
}
func (n names) version(id string) ref {
	return ref{ID: id, Kind: "guestos_version", Name: n.versions[id]}
}
func (n names) hostOS(id string) ref {
	return ref{ID: id, Kind: "hostos_version", Name: n.hostos[id]}
}

// Short is the first five characters of a principal (its first group),
// as generated titles name it.
func Short(id string) string {
	if i := strings.IndexByte(id, '-'); i > 0 {
		return id[:i]
	}
	if len(id) > 7 {
		return id[:7]
	}
	return id
}

// abbrev is a version hash's first 8 characters, as release titles write it.
func abbrev(v string) string {
	if len(v) > 8 {
		return v[:8]
	}
	return v
}

// slug makes a word fit a proposal name.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			b.WriteRune(r)
		case r == '_' || r == ' ' || r == '.':
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// countOr is the one ref's name, or "N-plural".
func countOr(rs []ref, plural string) string {
	if len(rs) == 1 {
		return slug(rs[0].word())
	}
	return fmt.Sprintf("%d-%s", len(rs), plural)
}

// titleList is [abcde, fghij]: ids by their first group, as DFINITY's
// titles write them.
func titleList(rs []ref) string {
	var s []string
	for _, r := range rs {
		s = append(s, Short(r.ID))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// fullList is [id, id], as summaries write them.
func fullList(rs []ref) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.ID)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// Words says c in words, for a generated block's comment.
func (c Change) Words() string {
	switch c.Op {
	case OpAdd:
		return fmt.Sprintf("%s joins %s", Short(c.Subject), Short(c.Target))
	case OpRemove:
		return fmt.Sprintf("%s leaves %s", Short(c.Subject), Short(c.Target))
	case OpDeploy:
		return fmt.Sprintf("%s runs %s", Short(c.Subject), abbrev(c.Target))
	case OpAdmins:
		return fmt.Sprintf("%s admins set", Short(c.Subject))
	case OpRemoveNode, OpRemoveOperator, OpRemoveProvider:
		return fmt.Sprintf("%s removed", Short(c.Subject))
	}
	return fmt.Sprintf("%s: %s", Short(c.Subject), c.Op)
}

// Unclosable says what drift no kind closes: a subnet's type, cost
// schedule or SEV setting, a data center's region, a node's chip id or
// operator. alpage/generate notes it after what the kinds note.
func Unclosable(d *Drift) []string {
	var notes []string
	note := func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	for _, s := range d.Fleet.Subnets {
		f := d.Chain.Subnets[s.ID]
		if !f.Found {
			continue
		}
		name := d.n.subnet(s.ID).word()
		if want := orDefault(s.Type, "application"); f.Type != want {
			note("subnet %s: declared type %s, on-chain %s; a subnet's type is fixed when it is created (the registry refuses to change it)", name, want, f.Type)
		}
		if s.CostSchedule != "" && f.CostSchedule != "" && s.CostSchedule != f.CostSchedule {
			note("subnet %s: declared cost_schedule %s, on-chain %s; update_subnet does not carry the cost schedule", name, s.CostSchedule, f.CostSchedule)
		}
		if s.SevEnabled != f.SevEnabled {
			note("subnet %s: declared sev_enabled %v, on-chain %v; the registry refuses to change sev_enabled after a subnet is created", name, s.SevEnabled, f.SevEnabled)
		}
	}
	for _, dc := range d.Fleet.DataCenters {
		f := d.Chain.DataCenters[dc.ID]
		if f.Found && dc.Region != "" && f.Region != dc.Region {
			note("data center %s: declared region %q, on-chain %q; a data center's record is changed by a proposal alp does not make", dc.Name, dc.Region, f.Region)
		}
	}
	for _, n := range d.Fleet.Nodes {
		f := d.Chain.Nodes[n.ID]
		if n.Decommissioned || !f.Found || f.Err != "" {
			continue
		}
		if !bytes.Equal(f.Chip, n.Chip) {
			note("node %s: its chip id differs from the declared one; a node's chip id is recorded when it registers, and no proposal changes it", n.Name)
		}
		if n.Operator != "" && f.Operator != "" && f.Operator != n.Operator {
			note("node %s: declared under operator %s, on-chain under %s; a node's operator is set when it registers, and no proposal alp makes changes it", n.Name, d.n.operator(n.Operator).word(), d.n.operator(f.Operator).word())
		}
	}
	return notes
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
